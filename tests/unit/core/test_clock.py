"""ManualClock: timers fire in due order, at their due time, and only when time is advanced."""

from __future__ import annotations

from broker.core.model.clock import ManualClock


def test_timers_fire_in_due_order_at_their_due_time() -> None:
    clock = ManualClock(start_ms=1000)
    fired: list[tuple[str, float, int]] = []
    clock.call_later(2.0, lambda: fired.append(("b", clock.monotonic_s(), clock.now_ms())))
    clock.call_later(1.0, lambda: fired.append(("a", clock.monotonic_s(), clock.now_ms())))
    cancelled = clock.call_later(1.5, lambda: fired.append(("x", 0, 0)))
    cancelled.cancel()
    clock.advance(0.5)
    assert fired == []
    clock.advance(5.0)
    assert fired == [("a", 1.0, 2000), ("b", 2.0, 3000)]
    assert clock.monotonic_s() == 5.5


def test_a_timer_scheduled_by_a_callback_fires_within_the_same_advance() -> None:
    clock = ManualClock()
    fired: list[float] = []

    def chain() -> None:
        clock.call_later(1.0, lambda: fired.append(clock.monotonic_s()))

    clock.call_later(1.0, chain)
    clock.advance(3.0)
    assert fired == [2.0]
    assert clock.pending == 0
