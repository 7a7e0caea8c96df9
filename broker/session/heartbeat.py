"""Heartbeat bookkeeping (AMQP 4.2.7): what to send and when the peer counts as dead, by timer ticks, no
clock.
"""

from __future__ import annotations


class HeartbeatMonitor:
    """The edge ticks every ``interval_s / 2``; two silent heartbeat intervals (four ticks) mean a dead peer.

    RabbitMQ sends a heartbeat when it has sent nothing for half the interval and drops a peer after two
    missed
    intervals (heartbeats.md); any frame counts as activity in both directions.
    """

    __slots__ = ("_silent_ticks", "interval_s", "received", "sent")

    def __init__(self) -> None:
        self.interval_s = 0
        self.received = False
        self.sent = False
        self._silent_ticks = 0

    def peer_dead(self) -> bool:
        if self.received:
            self.received = False
            self._silent_ticks = 0
            return False
        self._silent_ticks += 1
        return self._silent_ticks >= 4

    def should_send(self) -> bool:
        due = not self.sent
        self.sent = False
        return due
