"""Heartbeat bookkeeping (AMQP 4.2.7) as RabbitMQ's two heartbeaters (rabbit_heartbeat) do it, by timer ticks,
no clock.
"""

from __future__ import annotations


class HeartbeatMonitor:
    """The edge ticks every ``interval_s / 2`` from connection.tune-ok on; any frame counts as activity.

    Sender (rabbit_heartbeat's sender, period interval/2): a tick sends a heartbeat when nothing else was
    sent since the previous tick, and the first tick always does. Its own heartbeats are not activity
    (RabbitMQ reads the socket's send_oct again after sending one), so an idle connection gets one every half
    interval: two per negotiated interval, checked against RabbitMQ 3.10.8 at heartbeat=2 (one a second).

    Receiver (period interval, threshold 1): every second tick checks whether anything arrived since the
    previous check; the second silent check in a row means a dead peer, between two and three intervals after
    its last frame (RabbitMQ closed the socket 3.0 s after the last frame of a silent client at heartbeat=2).
    """

    __slots__ = ("_silent_checks", "_ticks", "interval_s", "received", "sent")

    def __init__(self) -> None:
        self.interval_s = 0
        self.received = False
        self.sent = False
        self._ticks = 0
        self._silent_checks = 0

    def peer_dead(self) -> bool:
        """Called first on every tick: the receiver's check, on every second one."""
        self._ticks += 1
        if self._ticks % 2:
            return False
        if self.received:
            self.received = False
            self._silent_checks = 0
            return False
        self._silent_checks += 1
        return self._silent_checks >= 2

    def should_send(self) -> bool:
        """Then: whether this tick sends a heartbeat. The heartbeat itself must not set ``sent``."""
        due = self._ticks == 1 or not self.sent
        self.sent = False
        return due
