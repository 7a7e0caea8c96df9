"""One AMQP 1.0 connection (part 2, 2.4): the SASL layer, open and close, and its sessions by channel; the
one place where errors become end and close frames. As rabbit_amqp_reader does in RabbitMQ 4.0: SASL is
required (a bare AMQP header is answered with the SASL header and the socket is reset), the open it answers
carries its limits and properties, and an error ends the scope it belongs to (a session's end, the
connection's close)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

import structlog

from broker.core.model.acting import INTERNAL, acting
from broker.session.amqp10 import sasl
from broker.session.amqp10.errors import (
    FRAMING_ERROR,
    ILLEGAL_STATE,
    INTERNAL_ERROR,
    ConnectionError,
    SessionError,
)
from broker.session.amqp10.open_answer import channel_max, our_open, vhost_name
from broker.session.amqp10.session import Session
from broker.session.limits import check_connection_limits
from protocol.amqp10.errors import AMQP10Error, FramingError, ProtocolHeaderMismatch
from protocol.amqp10.frames import (
    AMQP_HEADER,
    HEARTBEAT,
    SASL_HEADER,
    TYPE_SASL,
    Frame,
    FrameScanner,
    ProtocolHeader,
    encode_frame,
)
from protocol.amqp10.performatives import (
    Begin,
    Close,
    End,
    Open,
    Performative,
    decode_performative,
    encode_performative,
)
from protocol.amqp10.sasl import SASL_AUTH, SaslInit, SaslMechanisms, SaslOutcome, decode_sasl
from protocol.errors import AMQPError

if TYPE_CHECKING:
    from broker.core.broker import Broker
    from broker.core.queues.queue import Queue
    from broker.core.topology.vhost import VirtualHost
    from broker.session.config import SessionConfig

log = structlog.get_logger("warrenmq.connection")

# How long the peer has to read our close before the socket goes (rabbit_amqp_reader's close timeout).
CLOSE_DELAY_S: Final = 1.0
# A refused login: RabbitMQ 4.0.5 sends the sasl-outcome (auth) 3 s after the sasl-init and resets the
# socket 3 s later (measured: rabbit_amqp_reader's silent close delay, twice).
REFUSED_OUTCOME_DELAY_S: Final = 3.0

AWAITING_SASL_INIT = "sasl"
AWAITING_AMQP_HEADER = "sasl-done"
AWAITING_OPEN = "awaiting-open"
OPEN = "open"
CLOSED = "closed"


class Amqp10Transport(Protocol):
    """The socket as an AMQP 1.0 connection writes to it (``broker.server.amqp10_protocol``)."""

    def write(self, data: bytes) -> None: ...

    def close(self, after_s: float | None = None) -> None: ...

    def abort(self) -> None:
        """Reset the socket (rabbit_net:fast_close, linger 0): what RabbitMQ does to a refused handshake."""
        ...

    def later(self, delay_s: float, callback: Callable[[], None]) -> None:
        """Call ``callback`` in ``delay_s`` seconds unless the socket is gone by then."""
        ...


class Connection:
    """Per-connection AMQP 1.0 state; the edge feeds it octets and it writes frames through ``transport``."""

    def __init__(
        self, broker: Broker, config: SessionConfig, transport: Amqp10Transport, peer: str, loopback: bool
    ) -> None:
        self.broker = broker
        self.config = config
        self.transport = transport
        self.peer = peer
        self.loopback = loopback
        self.state = AWAITING_SASL_INIT
        self.scanner = FrameScanner(max_frame_size=config.frame_max)
        self.username = ""
        self.mechanism = ""
        # Set by the edge on a TLS listener's connection: the user name a verified client certificate gives
        # the EXTERNAL mechanism (None without one).
        self.tls = False
        self.peer_cert_login: str | None = None
        self.container_id = ""
        self.vhost: VirtualHost | None = None
        self.sessions: dict[int, Session] = {}
        self.exclusive_queues: list[Queue] = []  # declared through the management node
        self.peer_max_frame_size = 512
        self.max_message_size = config.max_message_size
        self.channel_max = channel_max(config)
        self.frame_max = config.frame_max  # the smaller of ours and the client's once open
        self.peer_idle_time_out_ms = 0
        self.writable = True
        self.alarmed = False  # a resource alarm is in effect (set by the edge)
        self.received = True  # input since the last silence check (the edge's heartbeat timer)
        self._silent_ticks = 0
        self._closed = False

    # -- input

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        self.received = True
        try:
            items = self.scanner.feed(data)
        except ProtocolHeaderMismatch as error:
            self._header_refused(error.header)
            return
        except FramingError as error:
            self._close_with(ConnectionError(FRAMING_ERROR, error.description))
            return
        for item in items:
            try:
                if isinstance(item, ProtocolHeader):
                    self._on_header(item)
                elif item.frame_type == TYPE_SASL:
                    self._on_sasl(item)
                elif item.body:
                    self._on_frame(item)
            except SessionError as error:
                self._end_session(item.channel if isinstance(item, Frame) else 0, error)
            except ConnectionError as error:
                self._close_with(error)
            except AMQP10Error as error:
                self._close_with(ConnectionError(error.condition, error.description))
            except Exception:
                # A bug must not take the broker down: close this connection, keep serving the others.
                log.exception("amqp10_internal_error", peer=self.peer)
                self._close_with(ConnectionError(INTERNAL_ERROR, "internal error"))
            if self._closed:
                return
        try:
            for session in list(self.sessions.values()):
                session.after_read()
        except Exception:
            log.exception("amqp10_internal_error", peer=self.peer)
            self._close_with(ConnectionError(INTERNAL_ERROR, "internal error"))

    def _header_refused(self, header: bytes) -> None:
        # rabbit_amqp_reader: "RabbitMQ requires SASL security layer": the SASL header goes back and the
        # socket is reset, with the protocol ID the client sent in the log.
        protocol_id = header[4] if len(header) > 4 else 0
        log.error(
            f"closing AMQP 1.0 connection ({self.peer}): RabbitMQ requires SASL security layer "
            f"(expected protocol ID 3, but client sent protocol ID {protocol_id})",
            domain="connection",
        )
        self.transport.write(SASL_HEADER)
        self._closed = True
        self.state = CLOSED
        self.transport.abort()

    def _on_header(self, item: ProtocolHeader) -> None:
        if self.state == AWAITING_SASL_INIT and item.is_sasl:
            self.transport.write(SASL_HEADER)
            self._send_sasl(SaslMechanisms(sasl_server_mechanisms=sasl.offered(self.config, self.tls)))
        elif self.state == AWAITING_AMQP_HEADER and item.header == AMQP_HEADER:
            self.state = AWAITING_OPEN
            self.scanner.max_frame_size = self.config.frame_max
            self.transport.write(AMQP_HEADER)
        else:
            self._header_refused(item.header)

    def _on_sasl(self, frame: Frame) -> None:
        init = decode_sasl(frame.body)
        if self.state != AWAITING_SASL_INIT or not isinstance(init, SaslInit):
            raise ConnectionError(ILLEGAL_STATE, f"unexpected SASL frame {type(init).__name__}")
        mechanism = str(init.mechanism)
        username, refused = sasl.login(
            self.broker,
            mechanism,
            init.initial_response or b"",
            sasl.offered(self.config, self.tls),
            self.peer_cert_login,
            self.config.loopback_users,
            self.loopback,
        )
        self.mechanism = mechanism
        self.broker.auth_attempts.record("amqp10", refused is None)
        if refused is not None:
            log.error(
                f"closing AMQP 1.0 connection ({self.peer}): {mechanism} login refused: {refused}",
                domain="connection",
            )
            self._closed = True
            self.state = CLOSED
            self.transport.later(REFUSED_OUTCOME_DELAY_S, self._refused_outcome)
            return
        self.username = username
        self.state = AWAITING_AMQP_HEADER
        self.scanner.expect_protocol_header()
        self._send_sasl(SaslOutcome(code=0))

    def _refused_outcome(self) -> None:
        self._send_sasl(SaslOutcome(code=SASL_AUTH))
        self.transport.later(REFUSED_OUTCOME_DELAY_S, self.transport.abort)

    def _on_frame(self, frame: Frame) -> None:
        performative, payload = decode_performative(frame.body)
        if self.state == AWAITING_OPEN:
            if not isinstance(performative, Open):
                raise ConnectionError(ILLEGAL_STATE, f"expected open, got {type(performative).__name__}")
            self._open(performative)
            return
        if self.state != OPEN:
            return
        channel = frame.channel
        if isinstance(performative, Close):
            self._client_closed()
        elif isinstance(performative, Begin):
            self._begin(channel, performative)
        elif isinstance(performative, End):
            session = self.sessions.pop(channel, None)
            if session is not None:
                session.release()
                self.send(channel, End())
        else:
            session = self.sessions.get(channel)
            if session is None:
                # Part 2, 2.7.2: a frame on a channel with no session is a connection error.
                raise ConnectionError(ILLEGAL_STATE, f"no session on channel {channel}")
            session.on_performative(performative, payload)

    # -- connection and session lifecycle

    def _open(self, open_: Open) -> None:
        name = vhost_name(open_.hostname)
        vhost = self.broker.vhosts.get(name)
        if vhost is None or not self.broker.access.can_access_vhost(self.username, name):
            # RabbitMQ 4.0.5 answers neither open nor close: the reason goes to the log, the socket is reset.
            reason = (
                f"vhost '{name}' not found"
                if vhost is None
                else f"access to vhost '{name}' refused for user '{self.username}'"
            )
            log.error(f"closing AMQP 1.0 connection ({self.peer}): {reason}", domain="connection")
            self._closed = True
            self.state = CLOSED
            self.transport.abort()
            return
        try:
            check_connection_limits(self.broker, vhost, self.username)
        except AMQPError as error:
            # The vhost's or the user's max-connections: refused as an unusable vhost is (a reset), the
            # reason in the log.
            log.error(f"closing AMQP 1.0 connection ({self.peer}): {error.text}", domain="connection")
            self._closed = True
            self.state = CLOSED
            self.transport.abort()
            return
        self.vhost = vhost
        vhost.connections[self] = None  # deleting the vhost or the user closes it (force_close)
        vhost.churn.connection_created += 1  # 4.0.5 counts 1.0 connections in the churn (not sessions)
        self.container_id = open_.container_id
        self.peer_max_frame_size = open_.max_frame_size if open_.max_frame_size is not None else 2**32 - 1
        self.peer_idle_time_out_ms = open_.idle_time_out or 0
        self.frame_max = min(self.config.frame_max, self.peer_max_frame_size)
        if open_.channel_max is not None:
            self.channel_max = min(channel_max(self.config), int(open_.channel_max))
        self.state = OPEN
        log.info(
            f"AMQP 1.0 connection from container '{self.container_id}': user '{self.username}' authenticated "
            f"using SASL mechanism {self.mechanism} and granted access to vhost '{name}'",
            domain="connection",
        )
        self.send(0, our_open(self.config, self.broker.profile.rabbitmq_version))

    def _begin(self, channel: int, begin: Begin) -> None:
        if channel > self.channel_max:
            # rabbit_amqp_reader refuses a channel over the negotiated channel-max (the smaller of the
            # client's and session_max_per_connection - 1, 63 by default) before any session sees it.
            raise ConnectionError(
                FRAMING_ERROR,
                f"channel number ({channel}) exceeds maximum channel number ({self.channel_max})",
            )
        if channel in self.sessions:
            # The begin goes to the session already there, which ends on the unexpected frame
            # (rabbit_amqp_session: amqp:internal-error "Unexpected frame {'v1_0.begin',...}"). The user's
            # max-channels does not limit sessions: 4.0.5 counts no 1.0 session as a channel.
            raise SessionError(INTERNAL_ERROR, "Unexpected frame begin")
        assert self.vhost is not None
        session = Session(self, channel, self.vhost, begin)
        self.sessions[channel] = session
        self.send(channel, session.begin_reply())
        if self.alarmed:
            session.set_alarm(True)

    def _end_session(self, channel: int, error: SessionError) -> None:
        session = self.sessions.pop(channel, None)
        if session is not None:
            session.release()
        self.send(channel, End(error=error.error()))

    def _client_closed(self) -> None:
        self._teardown()
        self.send(0, Close())
        self._closed = True
        self.state = CLOSED
        self.transport.close()

    def _close_with(self, error: ConnectionError) -> None:
        log.warning(f"closing AMQP 1.0 connection ({self.peer}): {error.condition}: {error.description}")
        if self.state in (OPEN, AWAITING_OPEN):
            self.send(0, Close(error=error.error()))
        self._teardown()
        self._closed = True
        self.state = CLOSED
        self.transport.close(after_s=CLOSE_DELAY_S)

    def force_close(self, text: str) -> None:
        """Its vhost or user was deleted (``VhostConnection``), or the node is stopping: RabbitMQ 4.0.5
        closes an AMQP 1.0 connection then with amqp:internal-error and 'Connection forced: "<text>"'
        (observed on it for both)."""
        if not self._closed:
            self._close_with(ConnectionError(INTERNAL_ERROR, f'Connection forced: "{text}"'))

    def _teardown(self) -> None:
        if self.vhost is not None and self in self.vhost.connections:
            del self.vhost.connections[self]
            self.vhost.churn.connection_closed += 1
        sessions = list(self.sessions.values())
        self.sessions.clear()
        for session in sessions:
            session.release()
        # Exclusive queues go with their connection (rabbit_amqqueue's owner monitor), as the broker acts.
        vhost = self.vhost
        if vhost is not None:
            with acting(INTERNAL):
                for queue in self.exclusive_queues:
                    if vhost.queues.get(queue.name) is queue:
                        vhost.remove_queue(queue)
        self.exclusive_queues.clear()

    # -- output

    def send(self, channel: int, performative: Performative, payload: bytes = b"") -> None:
        self.transport.write(encode_frame(encode_performative(performative, payload), channel))

    def write(self, data: bytes) -> None:
        self.transport.write(data)

    def _send_sasl(self, frame: Any) -> None:
        self.transport.write(encode_frame(encode_performative(frame), frame_type=TYPE_SASL))

    # -- edge notifications

    def connection_lost(self) -> None:
        if self.state == OPEN:
            log.warning(
                f"closing AMQP 1.0 connection ({self.peer}): client unexpectedly closed TCP connection",
                domain="connection",
            )
        self._teardown()
        self._closed = True
        self.state = CLOSED

    def set_alarm(self, alarmed: bool) -> None:
        """Resource alarms set or cleared: every session's incoming window closes or opens again."""
        if alarmed == self.alarmed:
            return
        self.alarmed = alarmed
        if not self._closed:
            for session in list(self.sessions.values()):
                session.set_alarm(alarmed)

    def set_writable(self, writable: bool) -> None:
        self.writable = writable
        if writable:
            for session in list(self.sessions.values()):
                session.wake()

    def idle_tick(self) -> None:
        """Every half idle-time-out: an empty frame keeps the peer's idle timer off (part 2, 2.4.5)."""
        if not self._closed and self.state == OPEN:
            self.transport.write(HEARTBEAT)

    def silence_tick(self) -> None:
        """Every half of our idle-time-out (the heartbeat): a client silent for two ticks in a row has let
        the idle-time-out it was given pass, and is closed with amqp:resource-limit-exceeded (part 2,
        2.4.5), as rabbit_heartbeat ends a silent peer."""
        if self._closed or self.state != OPEN:
            return
        if self.received:
            self.received = False
            self._silent_ticks = 0
            return
        self._silent_ticks += 1
        if self._silent_ticks >= 2:
            self._close_with(
                ConnectionError(
                    "amqp:resource-limit-exceeded",
                    f"no frame received from the client for {self.config.heartbeat_s} seconds",
                )
            )

    @property
    def closed(self) -> bool:
        return self._closed
