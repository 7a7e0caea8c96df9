"""Message-fate and topology events for observers (test inspection, the journal); free when nobody listens.

Emit sites test a cheap attribute before building anything, so with nothing attached the hot path pays one
attribute check per site (hot-path rule 7). Observers run synchronously on the loop thread and must only
append to their own buffers: they never block and never call back into the core.

Two lanes. Generic observers get a ``MessageEvent`` per fate (a slots object and a detail dict: about 1.6 µs a
message, fine for tests and tooling). The journal must cost almost nothing per message, so the steps every
message takes (publish + route, deliver, settle) reach it through ``JournalHook`` as plain positional values,
one call per step; its recorder attaches as an observer with ``hot=False`` (``attach_journal`` does both)
for topology and the rarer fates (dropped, dead-lettered, expired), which emit sites send to every observer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from broker.core.model.acting import ACTOR
from broker.core.model.event_types import Fate, MessageEvent, Notice, Observer, Topology, TopologyEvent
from broker.core.model.message import Message
from broker.core.queues.queue import DeliveryJournal, Queue
from broker.core.queues.unacked import Delivery

# The event vocabulary lives in broker.core.model.event_types (the queue uses it); callers may import it from
# here.
__all__ = [
    "EventBus",
    "Fate",
    "JournalHook",
    "MessageEvent",
    "Notice",
    "Observer",
    "Topology",
    "TopologyEvent",
]


class JournalHook(DeliveryJournal, Protocol):
    """The journal's fast lane for the steps every message takes. Implementations decide at ``published``
    whether to follow a message (sampling) and mark it through ``Message.journal``; the later calls come only
    for marked messages' copies, after the emit site tested that attribute."""

    def published(
        self,
        vhost: str,
        message: Message,
        queues: Sequence[Queue],
        mandatory: bool,
        channel: int,
        connection: str,
    ) -> None:
        """A publish was accepted and routed to ``queues`` (none: unroutable; returned if ``mandatory``)."""
        ...

    def settled(self, deliveries: list[Delivery], requeue: bool | None, closed: bool) -> None:
        """Deliveries were acked (``requeue`` None), nacked/rejected, or requeued when their channel closed
        or recovered (``closed``). May include unmarked messages: the hook filters."""
        ...


class EventBus:
    """Fans events out. Always present; emit sites skip all work while nothing is attached.

    ``observers`` get topology and the fates emitted with ``message``; ``hot_observers`` (every observer but
    the journal) also get the per-message steps, emitted with ``hot_message``; ``journal`` is the fast lane.
    ``stepping`` is true while either of the last two is attached: the per-message emit sites test only it, so
    with nothing attached they cost what they did before the fast lane existed.
    """

    __slots__ = ("hot_observers", "ids", "journal", "notices", "observers", "stepping", "tracer")

    def __init__(self) -> None:
        self.observers: list[Observer] = []
        self.hot_observers: list[Observer] = []
        self.journal: JournalHook | None = None
        self.stepping = False
        # The firehose (broker.session.tracing), attached while some vhost has tracing on; the emit sites
        # reach it only behind ``stepping``, so tracing off costs nothing more.
        self.tracer: Any = None
        self.ids = itertools.count(1)  # message ids, shared by observers and the journal
        # Listeners to lifecycle notices (users, vhosts, permissions, policies, parameters, connections,
        # channels): the event exchange. Emit sites test this list before building anything.
        self.notices: list[Callable[[Notice], None]] = []

    def _changed(self) -> None:
        self.stepping = self.journal is not None or bool(self.hot_observers) or self.tracer is not None

    def set_tracer(self, tracer: Any) -> None:
        """Attach the firehose tracer (None detaches it)."""
        self.tracer = tracer
        self._changed()

    def message_id(self, message: Message) -> int:
        """A broker-wide id, given the first time an observer sees the message (0 = never observed)."""
        if not message.message_id:
            message.message_id = next(self.ids)
        return message.message_id

    def message(
        self, fate: Fate, vhost: str, message: Message, queue: str | None = None, **detail: Any
    ) -> None:
        """A fate for every observer (the rarer ones: the journal takes these through the generic lane)."""
        event = MessageEvent(fate, vhost, message, self.message_id(message), queue, detail)
        for observer in self.observers:
            observer.on_message(event)

    def hot_message(
        self, fate: Fate, vhost: str, message: Message, queue: str | None = None, **detail: Any
    ) -> None:
        """A per-message step for the observers that follow steps as events (the journal has its own lane)."""
        event = MessageEvent(fate, vhost, message, self.message_id(message), queue, detail)
        for observer in self.hot_observers:
            observer.on_message(event)

    def topology(self, kind: Topology, vhost: str, **detail: Any) -> None:
        event = TopologyEvent(kind, vhost, detail, ACTOR.get())
        for observer in self.observers:
            observer.on_topology(event)

    def notify(
        self, name: str, fields: dict[str, Any], *, actor: str | None = None, named: bool = True
    ) -> None:
        """A lifecycle notice for every listener, naming ``actor`` (None: the current one, from
        broker.core.model.acting), or nobody when not ``named``."""
        if not self.notices:
            return
        who = (actor if actor is not None else ACTOR.get()) if named else None
        notice = Notice(name, fields, who)
        for listener in self.notices:
            listener(notice)

    def listen(self, listener: Callable[[Notice], None]) -> Callable[[], None]:
        """Send lifecycle notices to ``listener``; returns the function that stops it."""
        self.notices.append(listener)

        def stop() -> None:
            if listener in self.notices:
                self.notices.remove(listener)

        return stop

    def attach(self, observer: Observer, hot: bool = True) -> Callable[[], None]:
        """Start sending events to ``observer`` (with ``hot``, the per-message steps too); returns the
        function that stops it."""
        self.observers.append(observer)
        if hot:
            self.hot_observers.append(observer)
        self._changed()

        def detach() -> None:
            if observer in self.observers:
                self.observers.remove(observer)
            if observer in self.hot_observers:
                self.hot_observers.remove(observer)
            self._changed()

        return detach

    def attach_journal(self, journal: JournalHook, observer: Observer) -> Callable[[], None]:
        """Install the journal's fast lane (one at a time) and its generic observer; returns the detach."""
        if self.journal is not None:
            raise RuntimeError("a journal is already attached to this event bus")
        self.journal = journal
        detach_observer = self.attach(observer, hot=False)

        def detach() -> None:
            if self.journal is journal:
                self.journal = None
            detach_observer()

        return detach
