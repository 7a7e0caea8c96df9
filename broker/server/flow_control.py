"""Blocking publishers while a resource alarm is in effect, as rabbit_reader does.

A connection that has published is blocked: it gets `connection.blocked` (when its client announced the
capability) and the broker stops reading its socket, so TCP backpressure holds the publisher. A connection
that has only consumed keeps reading (acks and cancels must flow so queues can drain); it is blocked at its
first publish while the alarm lasts (rabbit_reader's `should_block`). When every alarm has cleared, blocked
connections get `connection.unblocked` and reading resumes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pamqp import commands

from protocol.connection import ConnectionState

if TYPE_CHECKING:
    from collections.abc import Iterable

    from broker.session.connection_session import ConnectionSession

ALARM = "alarm"


class Throttled(Protocol):
    """The edge of one client connection (``broker.server.amqp_protocol.AMQPProtocol``)."""

    session: ConnectionSession | None

    def pause_reading(self, reason: str) -> None: ...

    def resume_reading(self, reason: str) -> None: ...


def announces_blocked(session: ConnectionSession) -> bool:
    capabilities = session.client_properties.get("capabilities") or {}
    return isinstance(capabilities, dict) and bool(capabilities.get("connection.blocked", False))


class ConnectionThrottle:
    """One connection's alarm state: whether its reading is paused, and whether it was told so."""

    __slots__ = ("blocked", "edge", "notified")

    def __init__(self, edge: Throttled) -> None:
        self.edge = edge
        self.blocked = False
        self.notified = False

    def update(self, reasons: tuple[str, ...]) -> None:
        """Apply the alarms in effect (none: unblock); called on every alarm change and after input."""
        session = self.edge.session
        if session is None or session.state is not ConnectionState.OPEN:
            return
        if not reasons:
            if self.blocked:
                self.blocked = False
                self.edge.resume_reading(ALARM)
            if self.notified:
                self.notified = False
                session.send(0, commands.Connection.Unblocked())
            return
        if session.published:
            if not self.blocked:
                self.blocked = True
                self.edge.pause_reading(ALARM)
            self.notify(reasons)

    def notify(self, reasons: tuple[str, ...]) -> None:
        """connection.blocked, once per alarm episode, to a client that announced the capability."""
        session = self.edge.session
        if session is not None and not self.notified and announces_blocked(session):
            self.notified = True
            session.send(0, commands.Connection.Blocked(reason=reasons[0]))


class FlowControl:
    """The alarms in effect, applied to every connection when they change."""

    def __init__(self) -> None:
        self.reasons: tuple[str, ...] = ()

    @property
    def blocking(self) -> bool:
        return bool(self.reasons)

    def alarms_changed(self, reasons: tuple[str, ...], throttles: Iterable[ConnectionThrottle]) -> None:
        self.reasons = reasons
        for throttle in throttles:
            throttle.update(reasons)
