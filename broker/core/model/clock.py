"""The one clock the core reads: wall time for message stamps, monotonic time, timers; injected.

The server passes an event-loop clock (`broker.server.clock.LoopClock`); tests pass a `ManualClock` and move
it forward, so TTL, queue expiry, delayed messages and consumer timeouts are tested without sleeping.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None:
        """Stop the callback from running; cancelling a fired or cancelled timer does nothing."""
        ...


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock epoch milliseconds: x-death ``time``, per-message expiry deadlines."""
        ...

    def monotonic_s(self) -> float:
        """Seconds from an arbitrary origin, never going back: durations and timeouts."""
        ...

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once on the loop thread after ``delay_s`` seconds (0 or less: next turn)."""
        ...


class _ManualTimer:
    __slots__ = ("callback", "cancelled", "due")

    def __init__(self, due: float, callback: Callable[[], None]) -> None:
        self.due = due
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that only moves when told to: ``advance`` runs the timers that fall due, in due order.

    Wall time starts at ``start_ms`` (a fixed epoch instant, so x-death times are reproducible) and moves in
    step with monotonic time.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._start_ms = start_ms
        self._now_s = 0.0
        self._timers: list[tuple[float, int, _ManualTimer]] = []
        self._order = itertools.count()

    def now_ms(self) -> int:
        return self._start_ms + round(self._now_s * 1000)

    def monotonic_s(self) -> float:
        return self._now_s

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(self._now_s + max(delay_s, 0.0), callback)
        heapq.heappush(self._timers, (timer.due, next(self._order), timer))
        return timer

    @property
    def pending(self) -> int:
        """Timers not yet fired nor cancelled."""
        return sum(1 for _, _, timer in self._timers if not timer.cancelled)

    def advance(self, seconds: float = 0.0) -> None:
        """Move time forward by ``seconds``, firing each due timer at its own due time (timers a callback
        schedules within the window fire too)."""
        target = self._now_s + seconds
        timers = self._timers
        while timers and timers[0][0] <= target:
            due, _, timer = heapq.heappop(timers)
            if timer.cancelled:
                continue
            self._now_s = max(self._now_s, due)
            timer.cancelled = True
            timer.callback()
        self._now_s = target
