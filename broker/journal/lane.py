"""The journal's per-message lane: publish, deliver and settle of every message, on the loop thread.

It implements ``broker.core.events.events.JournalHook`` and packs the compact mode's hot row (one per delivery
attempt) itself; everything rarer goes back to its owner, the ``JournalRecorder`` (``LaneOwner``): publishes
that write rows now (unroutable, routing capture, full mode), full-mode deliveries and settlements, rejected
messages, and a full deliveries buffer.

Two implementations with one behaviour: ``broker/journal/_lane.c`` (``NativeLane``, built by setup.py; an
autoack delivery's row costs ~0.15 µs there against ~0.5 µs here, which the ≤ 10% cost target needs) and
``PyLane`` below, the readable reference, used when the extension is not built or
``WARRENMQ_JOURNAL_NATIVE=0``. The tests run both over the same traffic and compare the packed bytes.

Clock: publishes and acks share one reading per loop iteration (see broker.journal.recorder); deliveries and
closes read the clock themselves.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Final, Protocol

from broker.journal import schema as s
from broker.journal.rows import CODE, LAYOUTS, RowBuffer

if TYPE_CHECKING:
    from broker.core.model.message import Message
    from broker.core.queues.queue import Envelope, Queue
    from broker.core.queues.unacked import Delivery

_ACK, _NACK, _REQUEUE = CODE[s.ACK], CODE[s.NACK], CODE[s.REQUEUE]
_PACK_DELIVERY, _DELIVERY_SIZE = LAYOUTS[s.DELIVERIES].pack_into, LAYOUTS[s.DELIVERIES].size


class LaneOwner(Protocol):
    """What a lane hands back to the recorder."""

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
        """A sampled publish that writes rows now (``message.journal`` and ``message_id`` are set)."""
        ...

    def full_delivered(
        self, now: int, queue: Queue, envelope: Envelope, delivery_tag: int, no_ack: bool
    ) -> None:
        """Full mode: a sampled delivery."""
        ...

    def full_settled(self, deliveries: list[Delivery], requeue: bool | None, closed: bool) -> None:
        """Full mode: a settlement (may include unsampled messages)."""
        ...

    def rejected(self, now: int, queue: Queue, message: Message) -> None:
        """Compact mode: a sampled message was rejected or nacked without requeue."""
        ...

    def deliveries_full(self) -> None:
        """The deliveries buffer is full: hand it over and give the lane a new one (``lane.deliveries``)."""
        ...


class JournalLane(Protocol):
    """A lane as the recorder sees it (both implementations); also a
    ``broker.core.events.events.JournalHook``."""

    now: int
    deliveries: RowBuffer

    def __init__(
        self,
        owner: LaneOwner,
        deliveries: RowBuffer,
        clock: Callable[[], int],
        call_soon: Callable[[Callable[[], None]], object] | None,
        ids: Iterator[int],
        rng: Callable[[], float],
        sample: float,
        full: bool,
        quiet: bool,
    ) -> None: ...

    @property
    def inflight(self) -> dict[Envelope, int]: ...

    def tick(self) -> int: ...

    def published(
        self,
        vhost: str,
        message: Message,
        queues: Sequence[Queue],
        mandatory: bool,
        channel: int,
        connection: str,
    ) -> None: ...

    def delivered(self, queue: Queue, envelope: Envelope, delivery_tag: int, no_ack: bool) -> None: ...

    def settled(self, deliveries: list[Delivery], requeue: bool | None, closed: bool) -> None: ...


class PyLane:
    """The pure-Python lane (see the module docstring); ``NativeLane`` in _lane.c mirrors it line by line."""

    __slots__ = (
        "_expire_cb",
        "call_soon",
        "clock",
        "deliveries",
        "full",
        "ids",
        "inflight",
        "now",
        "owner",
        "quiet",
        "rng",
        "sample",
        "sampling",
    )

    def __init__(
        self,
        owner: LaneOwner,
        deliveries: RowBuffer,
        clock: Callable[[], int],
        call_soon: Callable[[Callable[[], None]], object] | None,
        ids: Iterator[int],
        rng: Callable[[], float],
        sample: float,
        full: bool,
        quiet: bool,
    ) -> None:
        self.owner = owner
        self.deliveries = deliveries
        self.clock = clock
        self.call_soon = call_soon
        self.ids = ids
        self.rng = rng
        self.sample = sample
        self.sampling = sample < 1.0
        self.full = full
        self.quiet = quiet  # a routed publish writes nothing now
        self.now = 0  # this loop iteration's reading (ns) once taken; 0: read the clock
        self.inflight: dict[Envelope, int] = {}  # sampled deliveries awaiting settlement -> deliver time
        self._expire_cb = self.expire

    def tick(self) -> int:
        """Read the clock; on a loop, keep the reading for this iteration's other publishes and acks."""
        now = self.clock()
        if self.call_soon is not None:
            self.now = now
            self.call_soon(self._expire_cb)
        return now

    def expire(self) -> None:
        self.now = 0

    def published(
        self,
        vhost: str,
        message: Message,
        queues: Sequence[Queue],
        mandatory: bool,
        channel: int,
        connection: str,
    ) -> None:
        if self.sampling and self.rng() >= self.sample:
            return
        now = self.now or self.tick()
        fanout = len(queues)
        message.journal = (now, fanout)
        message.message_id = next(self.ids)
        if fanout and self.quiet:
            return
        self.owner.published_rows(now, vhost, message, queues, mandatory, channel, connection)

    def delivered(self, queue: Queue, envelope: Envelope, delivery_tag: int, no_ack: bool) -> None:
        mark = envelope.message.journal
        if mark is None:
            return
        now = self.clock()  # read per delivery: see broker.journal.recorder
        if self.full:
            self.owner.full_delivered(now, queue, envelope, delivery_tag, no_ack)
        elif no_ack:
            self._row(now, _ACK, queue, envelope, mark, now, 0)
        else:
            self.inflight[envelope] = now

    def settled(self, deliveries: list[Delivery], requeue: bool | None, closed: bool) -> None:
        if self.full:
            self.owner.full_settled(deliveries, requeue, closed)
            return
        if closed:
            outcome, reason = _REQUEUE, 0
        elif requeue is None:
            outcome, reason = _ACK, 0
        else:
            outcome, reason = _NACK, (_REQUEUE if requeue else 0)  # reason "requeue" shares the code
        inflight = self.inflight
        for delivery in deliveries:
            envelope = delivery.envelope
            mark = envelope.message.journal
            if mark is None:
                continue
            now = self.clock() if closed else (self.now or self.tick())
            deliver_ts = inflight.pop(envelope, None)
            if deliver_ts is not None:  # one row per delivery attempt
                self._row(now, outcome, delivery.queue, envelope, mark, deliver_ts, reason)
            if requeue is False:
                self.owner.rejected(now, delivery.queue, envelope.message)

    def _row(
        self,
        now: int,
        outcome: int,
        queue: Queue,
        envelope: Envelope,
        mark: tuple[int, int],
        deliver_ts: int,
        reason: int,
    ) -> None:
        """One compact deliveries row (schema.DELIVERIES, packed as broker.journal.rows describes)."""
        buffer = self.deliveries
        message = envelope.message
        codes = buffer.codes
        vhost_code, queue_code = buffer.queues.get(queue) or buffer.queue_codes(queue)
        exchange = codes.get(message.exchange)
        if exchange is None:
            exchange = buffer.intern(message.exchange)
        routing_key = codes.get(message.routing_key)
        if routing_key is None:
            routing_key = buffer.intern(message.routing_key)
        _PACK_DELIVERY(
            buffer.data, buffer.rows * _DELIVERY_SIZE, now, outcome, vhost_code, message.message_id, exchange,
            routing_key, queue_code, mark[1], len(message.body), mark[0], deliver_ts, envelope.redelivered,
            reason,
        )  # fmt: skip
        buffer.rows += 1
        if buffer.rows >= buffer.limit:
            self.owner.deliveries_full()


def _load_native() -> type[JournalLane] | None:
    if os.environ.get("WARRENMQ_JOURNAL_NATIVE", "1") == "0":
        return None
    try:
        from broker.journal import _lane
    except ImportError:  # not built (no C compiler at install): the reference lane serves, at ~3x the cost
        return None
    # The C lane packs the deliveries row and picks the outcome codes by hand: a schema or vocabulary change
    # that it does not share turns it off here, and tests/unit/journal/test_lane.py fails.
    if LAYOUTS[s.DELIVERIES].struct.format != _lane.DELIVERY_FORMAT or _lane.CODES != (_ACK, _NACK, _REQUEUE):
        return None
    from broker.core.model.message import Message
    from broker.core.queues.queue import Envelope
    from broker.core.queues.unacked import Delivery

    _lane.bind(Message, Envelope, Delivery, RowBuffer)
    return _lane.NativeLane


NATIVE_LANE: Final = _load_native()


def lane_class(native: bool | None = None) -> type[JournalLane]:
    """The C lane if built (``native`` None), or the one asked for (True fails if it is not built)."""
    if native is False or (native is None and NATIVE_LANE is None):
        return PyLane
    if NATIVE_LANE is None:
        raise RuntimeError("the native journal lane (broker/journal/_lane.c) is not built")
    return NATIVE_LANE
