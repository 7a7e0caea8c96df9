"""The real clock: the event loop's timers and time, behind the core's `Clock` protocol."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from broker.core.model.clock import TimerHandle


class LoopClock:
    """Implements ``broker.core.model.clock.Clock`` on one asyncio loop."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_s(self) -> float:
        return self._loop.time()

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        return self._loop.call_later(max(delay_s, 0.0), callback)
