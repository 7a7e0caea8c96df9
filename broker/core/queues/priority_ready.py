"""The ready list of a priority queue (x-max-priority): one FIFO per priority level, highest served first.

It offers the deque operations `Queue` uses (append, appendleft, popleft, [0], len, iteration, clear), so a
priority queue runs the same code as a plain one; plain queues keep their bare deque and pay nothing.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterator

from broker.core.model.envelope import Envelope, seq_of


class PriorityReady:
    """``levels[p]`` holds the ready messages of priority ``p`` in publish order.

    A message's priority is its ``priority`` property capped at the queue's maximum; no priority counts as 0
    (RabbitMQ priority.md).
    """

    __slots__ = ("_len", "levels", "max_priority")

    def __init__(self, max_priority: int) -> None:
        self.max_priority = max_priority
        self.levels: list[deque[Envelope]] = [deque() for _ in range(max_priority + 1)]
        self._len = 0

    def level_of(self, envelope: Envelope) -> deque[Envelope]:
        priority = envelope.message.priority or 0
        return self.levels[min(priority, self.max_priority)]

    def append(self, envelope: Envelope) -> None:
        self.level_of(envelope).append(envelope)
        self._len += 1

    def appendleft(self, envelope: Envelope) -> None:
        self.level_of(envelope).appendleft(envelope)
        self._len += 1

    def insert_in_order(self, envelope: Envelope) -> None:
        """A requeued message goes back to its publish position within its priority level."""
        level = self.level_of(envelope)
        level.insert(bisect_left(level, envelope.seq, key=seq_of), envelope)
        self._len += 1

    def _top(self) -> deque[Envelope]:
        for level in reversed(self.levels):
            if level:
                return level
        raise IndexError("pop from an empty priority queue")

    def popleft(self) -> Envelope:
        envelope = self._top().popleft()
        self._len -= 1
        return envelope

    def pop(self) -> Envelope:
        """The newest message of the lowest non-empty priority (not used for delivery)."""
        for level in self.levels:
            if level:
                self._len -= 1
                return level.pop()
        raise IndexError("pop from an empty priority queue")

    def __getitem__(self, index: int) -> Envelope:
        if index != 0:
            raise IndexError("only the head of a priority queue can be read")
        return self._top()[0]

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[Envelope]:
        for level in reversed(self.levels):
            yield from level

    def clear(self) -> None:
        for level in self.levels:
            level.clear()
        self._len = 0
