"""Consumer acknowledgement timeout (`consumer_timeout`): a channel holding a delivery unacknowledged for
longer than the timeout is closed with 406 and its messages requeued (evaluate_consumer_timeout).

Nothing is stamped per delivery: every tick snapshots each channel's next delivery tag, and since tags grow,
an unacked tag below a snapshot taken at least ``timeout`` ago has been outstanding at least that long. A
delivery is caught between ``timeout`` and ``timeout + tick`` after it was sent; RabbitMQ's check is a
periodic tick as well.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from broker.core.model.clock import Clock, TimerHandle
from broker.core.queues.queue import Queue
from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort, ConnectionPort

# Ticks per timeout: the overshoot is at most timeout / TICKS_PER_TIMEOUT; capped so long timeouts still
# check at least once a minute.
TICKS_PER_TIMEOUT = 10
MAX_TICK_S = 60.0


def timed_out(channel_id: int, timeout_ms: int) -> ChannelError:
    return ChannelError(
        ReplyCode.PRECONDITION_FAILED,
        f"delivery acknowledgement on channel {channel_id} timed out. Timeout value used: {timeout_ms} ms. "
        "This timeout value can be configured, see consumers doc guide to learn more",
    )


def _is_quorum(queue: Queue) -> bool:
    features = queue.features
    return features is not None and features.settings.queue_type == "quorum"


class AckTimeoutWatch:
    """One per open connection, ticking on the broker's clock while the connection lives."""

    def __init__(self, session: ConnectionPort, clock: Clock, timeout_ms: int, classic_checked: bool) -> None:
        self.session = session
        self.clock = clock
        self.timeout_ms = timeout_ms
        # RabbitMQ 4.3 checks the timeout for quorum queues only (profile row consumer_timeout_classic).
        self.classic_checked = classic_checked
        self.tick_s = min(MAX_TICK_S, timeout_ms / 1000 / TICKS_PER_TIMEOUT)
        self._marks: dict[ChannelPort, deque[tuple[float, int]]] = {}
        self._timer: TimerHandle | None = None

    def start(self) -> None:
        self._timer = self.clock.call_later(self.tick_s, self.tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._marks.clear()

    def tick(self) -> None:
        now = self.clock.monotonic_s()
        deadline = now - self.timeout_ms / 1000
        channels = self.session.channels
        for channel in list(self._marks):
            if channels.get(channel.channel_id) is not channel or channel.closing:
                del self._marks[channel]
        for channel in list(channels.values()):
            if channel.closing:
                continue
            marks = self._marks.setdefault(channel, deque())
            marks.append((now, channel.unacked.next_tag))
            # Keep only the newest mark at or before the deadline, and everything after it.
            while len(marks) >= 2 and marks[1][0] <= deadline:
                marks.popleft()
            if marks[0][0] > deadline:
                continue
            if self._expired(channel, marks[0][1]):
                del self._marks[channel]
                channel.close_with_error(timed_out(channel.channel_id, self.timeout_ms))
        self._timer = self.clock.call_later(self.tick_s, self.tick)

    def _expired(self, channel: ChannelPort, tag_at_deadline: int) -> bool:
        for delivery in channel.unacked.outstanding():
            if delivery.delivery_tag >= tag_at_deadline:
                return False  # tags are in order: nothing older is left
            if self.classic_checked or _is_quorum(delivery.queue):
                return True
        return False
