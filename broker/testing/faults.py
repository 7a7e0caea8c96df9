"""Fault injection for tests: forced connection closes (320), channel errors, connection.blocked,
nacked or withheld publisher confirms, silent heartbeats.

Runs on the broker's loop thread (`BrokerThread`/`VhostHandle` marshal calls from other threads). The
session-side switches (`SessionFaults`) are installed on first use only, so a broker nobody injects faults
into pays nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from broker.session.faults import SessionFaults
from protocol.connection import ConnectionState
from protocol.errors import ChannelError, HardError, ReplyCode

if TYPE_CHECKING:
    from broker.server.amqp_protocol import AMQPProtocol
    from broker.server.server import Server
    from broker.session.connection_session import ConnectionSession

# rabbit_mgmt_wm_connection's default reason for DELETE /api/connections/{name}.
MANAGEMENT_CLOSE_TEXT = "Closed via management plugin"
# What RabbitMQ's memory alarm puts in connection.blocked (rabbit_reader).
DEFAULT_BLOCK_REASON = "low on memory"


class Faults:
    """Misbehaviour on demand, scoped to a vhost; every method returns how many targets it affected."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._timers: list[object] = []

    @property
    def switches(self) -> SessionFaults:
        """The session-side switches, installed on the server and every existing session on first use."""
        faults = self.server.faults
        if faults is None:
            faults = self.server.faults = SessionFaults()
            for protocol in self.server.connections:
                if protocol.session is not None:
                    protocol.session.faults = faults
        return faults

    def connections(self, vhost: str | None = "/") -> list[AMQPProtocol]:
        """Open connections on ``vhost`` (None: all), oldest first."""
        found = []
        for protocol in self.server.connections:
            session = protocol.session
            if session is None or session.state is not ConnectionState.OPEN:
                continue
            if vhost is None or (session.vhost is not None and session.vhost.name == vhost):
                found.append(protocol)
        return found

    def _sessions(self, vhost: str | None, name: str | None = None) -> list[ConnectionSession]:
        return [
            protocol.session
            for protocol in self.connections(vhost)
            if protocol.session is not None and (name is None or protocol.name == name)
        ]

    def close_connections(
        self, vhost: str | None = "/", text: str = MANAGEMENT_CLOSE_TEXT, name: str | None = None
    ) -> int:
        """connection.close 320 "CONNECTION_FORCED - <text>", as the management UI / HTTP API closes one."""
        sessions = self._sessions(vhost, name)
        for session in sessions:
            session.force_close(text)
        return len(sessions)

    def channel_error(
        self,
        vhost: str | None = "/",
        code: int = ReplyCode.PRECONDITION_FAILED,
        text: str = "fault injected by WarrenMQ",
        channel_id: int | None = None,
    ) -> int:
        """Close every open channel (or ``channel_id``) of the vhost's connections with ``code``; a hard
        code closes the connection instead, as RabbitMQ does for a hard error raised in a channel."""
        reply = ReplyCode(code)
        affected = 0
        for session in self._sessions(vhost):
            if reply.is_hard:
                session.hard_close(HardError(reply, text))
                affected += 1
                continue
            for number, channel in list(session.channels.items()):
                if not channel.closing and (channel_id is None or number == channel_id):
                    channel.close_with_error(ChannelError(reply, text))
                    affected += 1
        return affected

    def block(self, vhost: str | None = "/", reason: str = DEFAULT_BLOCK_REASON) -> int:
        """Send connection.blocked to connections whose client announced the `connection.blocked`
        capability (others get nothing, as with RabbitMQ). Publishes are still accepted: only the
        notification is simulated."""
        return self._notify(vhost, commands.Connection.Blocked(reason=reason))

    def unblock(self, vhost: str | None = "/") -> int:
        return self._notify(vhost, commands.Connection.Unblocked())

    def _notify(
        self, vhost: str | None, method: commands.Connection.Blocked | commands.Connection.Unblocked
    ) -> int:
        sessions = [session for session in self._sessions(vhost) if _announces_blocked(session)]
        for session in sessions:
            session.send(0, method)
        return len(sessions)

    def nack_next_confirms(self, count: int = 1, vhost: str = "/") -> None:
        """The next ``count`` publishes on confirm-mode channels of ``vhost`` get basic.nack, not ack."""
        switches = self.switches
        switches.nack_confirms[vhost] = switches.nack_confirms.get(vhost, 0) + count

    def hold_confirms(self, vhost: str = "/", seconds: float | None = None) -> None:
        """Withhold publisher confirms on ``vhost`` until `release_confirms` (or ``seconds`` later); held
        confirms then go out in order."""
        self.switches.hold_confirms.add(vhost)
        if seconds is not None:
            self._timers.append(self.server.loop.call_later(seconds, self.release_confirms, vhost))

    def release_confirms(self, vhost: str = "/") -> int:
        channels = self.switches.release(vhost)
        for channel in channels:
            channel.flush_confirms()
        return len(channels)

    def drop_heartbeats(self, vhost: str = "/", drop: bool = True) -> None:
        """Stop (or resume) sending heartbeat frames on ``vhost``'s connections, so clients see a dead
        broker after two missed intervals."""
        if drop:
            self.switches.silent_heartbeats.add(vhost)
        else:
            self.switches.silent_heartbeats.discard(vhost)

    def reset(self, vhost: str = "/") -> None:
        """Clear every fault switch for ``vhost`` (held confirms are released)."""
        faults = self.server.faults
        if faults is None:
            return
        faults.nack_confirms.pop(vhost, None)
        faults.silent_heartbeats.discard(vhost)
        if vhost in faults.hold_confirms:
            self.release_confirms(vhost)


def _announces_blocked(session: ConnectionSession) -> bool:
    capabilities = session.client_properties.get("capabilities") or {}
    return bool(capabilities.get("connection.blocked", False))
