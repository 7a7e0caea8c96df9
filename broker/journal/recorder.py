"""The journal's hook on the EventBus: turns message steps, fates and topology changes into rows, in batches.

Runs on the loop thread inside the broker's emit calls, so per message it only reads the clock and packs
rows into per-table buffers (broker.journal.rows); full buffers (``batch_rows``) and the periodic ``flush``
hand them to the writer thread. The per-message steps (publish + route, deliver, settle) arrive through the
fast lane, the recorder's ``lane`` (broker.journal.lane, in C when built: one call per step, positional
values), which packs the compact mode's hot row itself and hands everything else back here; topology
changes and the rarer fates (dropped, dead-lettered, expired) come through the generic observer lane.

Sampling is decided once per message at publish, before anything is built: a sampled message is marked with
``Message.journal = (publish_ns, fanout)`` and gets a broker-wide id in ``Message.message_id``; later emit
sites test that attribute, so unsampled messages cost one attribute check and all of a sampled message's
rows are kept. The mark lives and dies with the message, so nothing here grows with queue depth: the only
table is ``inflight``, the deliver time of each sampled delivery awaiting its ack (bounded by prefetch).

Timestamps are nanoseconds from ``time.time_ns`` (the writer converts whole columns to microseconds). On a
loop, publishes and acks, which arrive in socket reads, share one reading per loop iteration: the first of
them reads the clock and a ``call_soon`` callback forgets the reading at the start of the next iteration
(the messages of one read are handled as a batch anyway, ~500 a loop turn under load; reading per message
cost ~50 ns). Everything else reads the clock itself: deliveries are dispatched from ``call_soon`` callbacks
that may run in the next iteration before the reading is forgotten, and timers (expiry, consumer timeout)
fire before it is, so a shared reading would date them too early. This keeps publish <= deliver <= settle.
Without a loop (``call_soon`` None: tests, embedding) every row reads the clock.

Modes: ``full`` writes one events row per step and fate; ``compact`` writes one deliveries row per delivery
attempt (publish, deliver and settle times with the outcome) plus one per fate without a delivery
(unroutable, returned, drop, dead_letter, expire). Topology changes and journal_drop rows go to the events
table in both.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from broker.core.events.events import EventBus, Fate, MessageEvent, TopologyEvent
from broker.core.model.typed_json import encode_table
from broker.journal import schema as s
from broker.journal.lane import lane_class
from broker.journal.rows import CODE, LAYOUTS, NULL, RowBuffer

if TYPE_CHECKING:
    from broker.core.model.message import Message
    from broker.core.queues.queue import Envelope, Queue
    from broker.core.queues.unacked import Delivery

COMPACT, FULL = "compact", "full"

# The fates that reach the journal through the generic lane, and their row names.
_LEFT_QUEUE = {Fate.DROPPED: s.DROP, Fate.DEAD_LETTERED: s.DEAD_LETTER, Fate.EXPIRED: s.EXPIRE}
_PUBLISH, _ROUTE, _RETURN, _DELIVER = CODE[s.PUBLISH], CODE[s.ROUTE], CODE[s.RETURN], CODE[s.DELIVER]
_ACK, _NACK, _REQUEUE, _DROP = CODE[s.ACK], CODE[s.NACK], CODE[s.REQUEUE], CODE[s.DROP]
_PACK_EVENT, _EVENT_SIZE = LAYOUTS[s.EVENTS].pack_into, LAYOUTS[s.EVENTS].size


class BatchSink(Protocol):
    def submit(self, table: str, batch: RowBuffer) -> bool: ...


def _rejected_is_dropped(queue: Queue) -> bool:
    """A rejected message is dropped unless its queue dead-letters it (which reports DEAD_LETTERED)."""
    features = queue.features
    return features is None or features.settings.dead_letter_exchange is None


class JournalRecorder:
    """Builds the journal's rows. Its ``lane`` (broker.journal.lane) is the ``JournalHook`` for the
    per-message steps and hands the rarer rows back here; the recorder itself observes topology and the rarer
    fates. Attach both with ``attach``."""

    def __init__(
        self,
        sink: BatchSink,
        clock_ns: Callable[[], int] = time.time_ns,
        mode: str = COMPACT,
        sample: float = 1.0,
        capture_routing: bool = False,
        batch_rows: int = 32768,
        rng: Callable[[], float] = random.random,
        ids: Iterator[int] | None = None,
        call_soon: Callable[[Callable[[], None]], object] | None = None,
        native: bool | None = None,
    ) -> None:
        if mode not in (COMPACT, FULL):
            raise ValueError(f"journal mode must be {COMPACT!r} or {FULL!r}, not {mode!r}")
        self.sink = sink
        self.clock = clock_ns
        self.full = mode == FULL
        self.capture_routing = capture_routing
        self.batch_rows = batch_rows
        self.events = RowBuffer(s.EVENTS, batch_rows, recyclable=True)
        self.deliveries = RowBuffer(s.DELIVERIES, batch_rows, recyclable=True)
        self.captures = RowBuffer(s.ROUTE_CAPTURE, batch_rows, recyclable=True)
        self.lane = lane_class(native)(
            self,
            self.deliveries,
            clock_ns,
            call_soon,
            ids if ids is not None else itertools.count(1),  # the EventBus's, so ids are broker-wide
            rng,
            sample,
            self.full,
            not self.full and not capture_routing,  # quiet: a routed publish writes nothing now
        )

    def attach(self, events: EventBus) -> Callable[[], None]:
        """Start journaling ``events``' broker; returns the detach."""
        return events.attach_journal(self.lane, self)

    @property
    def inflight(self) -> dict[Envelope, int]:
        """Sampled deliveries awaiting settlement -> their deliver time (compact mode)."""
        return self.lane.inflight

    # -- buffering ------------------------------------------------------------------------------------------

    def _hand_over(self, table: str) -> None:
        """Give one table's buffer to the writer (when full, or on flush) and start a new one."""
        fresh = RowBuffer(table, self.batch_rows, recyclable=True)
        if table == s.EVENTS:
            batch, self.events = self.events, fresh
        elif table == s.DELIVERIES:
            batch, self.deliveries = self.deliveries, fresh
            self.lane.deliveries = fresh
        else:
            batch, self.captures = self.captures, fresh
        self.sink.submit(table, batch)

    def flush(self) -> None:
        """Hand every non-empty buffer to the writer (called on a timer and at shutdown)."""
        for buffer in (self.events, self.deliveries, self.captures):
            if buffer.rows:
                self._hand_over(buffer.table)

    def _add(self, buffer: RowBuffer, row: Sequence[Any]) -> None:
        """The general, slower path for the rarer rows (unroutable publishes, fates without a delivery,
        topology, routing capture)."""
        buffer.append(row)
        if buffer.rows >= buffer.limit:
            self._hand_over(buffer.table)

    # -- what the lane hands back (LaneOwner) ---------------------------------------------------------------

    def deliveries_full(self) -> None:
        self._hand_over(s.DELIVERIES)

    def published_rows(
        self,
        now: int,
        vhost: str,
        message: Message,
        queues: Sequence[Queue],
        mandatory: bool,
        channel: int,
        connection: str,
    ) -> None:
        fanout = len(queues)
        if self.capture_routing:
            self._add(
                self.captures,
                (now, vhost, message.message_id, message.exchange, message.routing_key,
                 encode_table(message.headers), [queue.name for queue in queues]),
            )  # fmt: skip
        if self.full:
            self._event_row(now, _PUBLISH, message, None, vhost, connection=connection, channel=channel)
            self._event_row(now, _ROUTE, message, None, vhost, fanout=fanout)
            if not fanout and mandatory:
                self._event_row(now, _RETURN, message, None, vhost, reason="NO_ROUTE")
        elif not fanout:
            outcome = s.OUTCOME_RETURNED if mandatory else s.OUTCOME_UNROUTABLE
            self._add(
                self.deliveries,
                (now, outcome, vhost, message.message_id, message.exchange, message.routing_key, None, 0,
                 len(message.body), now, None, None, None),
            )  # fmt: skip

    def full_delivered(
        self, now: int, queue: Queue, envelope: Envelope, delivery_tag: int, no_ack: bool
    ) -> None:
        message = envelope.message
        self._event_row(now, _DELIVER, message, queue, tag=delivery_tag, redelivered=envelope.redelivered)
        if no_ack:
            self._event_row(now, _ACK, message, queue)

    def full_settled(self, deliveries: list[Delivery], requeue: bool | None, closed: bool) -> None:
        lane = self.lane
        for delivery in deliveries:
            queue, message = delivery.queue, delivery.envelope.message
            if message.journal is None:
                continue
            now = self.clock() if closed else (lane.now or lane.tick())
            if not closed:
                if requeue is None:
                    self._event_row(now, _ACK, message, queue, tag=delivery.delivery_tag)
                    continue
                self._event_row(now, _NACK, message, queue, reason="requeue" if requeue else None)
            if requeue:
                self._event_row(now, _REQUEUE, message, queue)
            elif _rejected_is_dropped(queue):
                self._event_row(now, _DROP, message, queue, reason="rejected")

    def rejected(self, now: int, queue: Queue, message: Message) -> None:
        if _rejected_is_dropped(queue):
            self._delivery_row(now, s.DROP, queue.vhost, message, queue.name, "rejected")

    # -- generic lane (Observer): topology and the fates without a delivery ---------------------------------

    def on_topology(self, event: TopologyEvent) -> None:
        detail = json.dumps(event.detail, default=repr, separators=(",", ":"), sort_keys=True)
        self._add(self.events, (self.clock(), event.kind.value, event.vhost, *(None,) * 13, detail))

    def on_message(self, event: MessageEvent) -> None:
        message, queue = event.message, event.queue
        name = _LEFT_QUEUE.get(event.fate)
        mark = message.journal
        if mark is None or queue is None or name is None:
            return  # not sampled, or a step the fast lane reports
        now = self.clock()
        reason = event.detail.get("reason")
        if self.full:
            self._event_row(now, CODE[name], message, None, event.vhost, queue_name=queue, reason=reason)
        else:
            self._delivery_row(now, name, event.vhost, message, queue, reason)

    # -- rows -----------------------------------------------------------------------------------------------

    def _event_row(
        self,
        now: int,
        name: int,
        message: Message,
        queue: Queue | None,
        vhost: str = "",
        queue_name: str | None = None,
        fanout: int = NULL,
        connection: str | None = None,
        channel: int = NULL,
        tag: int = NULL,
        redelivered: bool | None = None,
        reason: str | None = None,
    ) -> None:
        """One full-mode row of a sampled message: ``name`` is a vocabulary code; the queue comes as the
        object (``queue``) or, with the vhost, by name."""
        mark = message.journal
        assert mark is not None
        buffer = self.events
        intern = buffer.intern
        if queue is not None:
            vhost_code, queue_code = buffer.queues.get(queue) or buffer.queue_codes(queue)
        else:
            vhost_code, queue_code = intern(vhost), intern(queue_name)
        _PACK_EVENT(
            buffer.data, buffer.rows * _EVENT_SIZE, now, name, vhost_code, message.message_id,
            intern(message.exchange), intern(message.routing_key), queue_code, mark[0], fanout,
            len(message.body), intern(connection), channel, tag, -1 if redelivered is None else redelivered,
            intern(reason), NULL, 0,
        )  # fmt: skip
        buffer.rows += 1
        if buffer.rows >= buffer.limit:
            self._hand_over(s.EVENTS)

    def _delivery_row(
        self, now: int, outcome: str, vhost: str, message: Message, queue: str, reason: str | None
    ) -> None:
        """A compact row for a fate without a delivery attempt (drop, dead_letter, expire)."""
        mark = message.journal
        assert mark is not None
        self._add(
            self.deliveries,
            (now, outcome, vhost, message.message_id, message.exchange, message.routing_key, queue, mark[1],
             len(message.body), mark[0], None, None, reason),
        )  # fmt: skip
