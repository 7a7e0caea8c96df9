"""The EventBus lanes: which observers get the per-message steps, and the flag the hot emit sites test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from broker.core.events.events import EventBus, Fate, MessageEvent, TopologyEvent
from broker.core.model.message import Message


class Seen:
    def __init__(self) -> None:
        self.fates: list[Fate] = []

    def on_message(self, event: MessageEvent) -> None:
        self.fates.append(event.fate)

    def on_topology(self, event: TopologyEvent) -> None:
        pass


class Journal(Seen):
    def published(self, *args: Any) -> None: ...

    def delivered(self, *args: Any) -> None: ...

    def settled(self, *args: Any) -> None: ...

    def attach(self, bus: EventBus) -> Callable[[], None]:
        return bus.attach_journal(self, self)


def test_step_emit_sites_are_off_until_a_step_observer_or_journal_attaches() -> None:
    bus = EventBus()
    detach_quiet = bus.attach(Seen(), hot=False)
    assert not bus.stepping
    detach_steps = bus.attach(Seen())
    assert bus.stepping
    detach_steps()
    assert not bus.stepping
    detach_journal = Journal().attach(bus)
    assert bus.stepping
    detach_journal()
    detach_quiet()
    assert (bus.stepping, bus.journal, bus.observers) == (False, None, [])


def test_the_journal_gets_rare_fates_as_events_but_not_the_steps() -> None:
    bus = EventBus()
    journal, inspector = Journal(), Seen()
    journal.attach(bus)
    bus.attach(inspector)
    message = Message("", "k", b"", b"")
    bus.hot_message(Fate.DELIVERED, "/", message, "q")
    bus.message(Fate.EXPIRED, "/", message, "q")
    assert journal.fates == [Fate.EXPIRED]
    assert inspector.fates == [Fate.DELIVERED, Fate.EXPIRED]


def test_only_one_journal_at_a_time() -> None:
    bus = EventBus()
    Journal().attach(bus)
    with pytest.raises(RuntimeError, match="already attached"):
        Journal().attach(bus)


def test_the_tracer_turns_stepping_on_only_while_attached() -> None:
    bus = EventBus()
    assert bus.stepping is False  # tracing off: the hot path's one test stays false
    tracer = object()
    bus.set_tracer(tracer)
    assert (bus.stepping, bus.tracer) == (True, tracer)
    bus.set_tracer(None)
    assert bus.stepping is False
