"""The journal recorder as it was before the fast lane (commit e3c753d), kept as a test oracle.

It is a generic EventBus observer building rows from ``MessageEvent``s, with per-message state in dicts. The
equivalence tests attach it next to the real journal and require the same rows (timestamps aside). One known
difference is not exercised there: after EXPIRED this recorder drops a message's state, so the DROPPED or
DEAD_LETTERED that follows (reason "expired") wrote no row; the journal now writes it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from broker.core.events.events import Fate, MessageEvent, TopologyEvent
from broker.core.model.typed_json import encode_table
from broker.journal import schema as s

COMPACT, FULL = "compact", "full"

# Queue-level fates after which the queue no longer holds that copy of the message.
_FINAL = frozenset((Fate.ACKED, Fate.DROPPED, Fate.DEAD_LETTERED, Fate.EXPIRED))
_FULL_EVENT = {
    Fate.DELIVERED: s.DELIVER,
    Fate.ACKED: s.ACK,
    Fate.NACKED: s.NACK,
    Fate.REQUEUED: s.REQUEUE,
    Fate.DROPPED: s.DROP,
    Fate.DEAD_LETTERED: s.DEAD_LETTER,
    Fate.EXPIRED: s.EXPIRE,
}
_COMPACT_FATE = {Fate.DROPPED: s.DROP, Fate.DEAD_LETTERED: s.DEAD_LETTER, Fate.EXPIRED: s.EXPIRE}


class _Live:
    """What the journal remembers about one sampled message until its last copy is settled."""

    __slots__ = ("body_size", "exchange", "fanout", "publish_ts", "remaining", "routing_key")

    def __init__(self, publish_ts: int, exchange: str, routing_key: str, body_size: int) -> None:
        self.publish_ts = publish_ts
        self.exchange = exchange
        self.routing_key = routing_key
        self.body_size = body_size
        self.fanout: int | None = None
        self.remaining = 0


class ReferenceRecorder:
    """The recorder of commit e3c753d, unchanged but for its sink: rows are kept in ``rows`` per table."""

    def __init__(
        self,
        clock: Callable[[], int],
        mode: str = COMPACT,
        sample: float = 1.0,
        capture_routing: bool = False,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.clock = clock
        self.full = mode == FULL
        self.sample = sample
        self.capture_routing = capture_routing
        self.rng = rng
        self.live: dict[int, _Live] = {}
        self.inflight: dict[tuple[int, str], tuple[int, bool]] = {}  # (msg, queue) -> deliver ts, redelivered
        self.rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in s.TABLES}

    def _add(self, table: str, row: tuple[Any, ...]) -> None:
        self.rows[table].append(row)

    # -- Observer ---------------------------------------------------------------------------------------

    def on_topology(self, event: TopologyEvent) -> None:
        detail = json.dumps(event.detail, default=repr, separators=(",", ":"), sort_keys=True)
        self._add(s.EVENTS, (self.clock(), event.kind.value, event.vhost, *(None,) * 13, detail))

    def on_message(self, event: MessageEvent) -> None:
        fate = event.fate
        if fate is Fate.PUBLISHED:
            self._published(event)
            return
        live = self.live.get(event.message_id)
        if live is None:
            return  # not sampled (or published before the journal started)
        if fate is Fate.ROUTED:
            self._routed(event, live)
        elif event.queue is not None:
            self._queue_fate(event, live)

    def _published(self, event: MessageEvent) -> None:
        if self.sample < 1.0 and self.rng() >= self.sample:
            return
        message, detail = event.message, event.detail
        ts = self.clock()
        live = _Live(ts, message.exchange, message.routing_key, len(message.body))
        self.live[event.message_id] = live
        if self.full:
            self._add(
                s.EVENTS,
                (ts, s.PUBLISH, event.vhost, event.message_id, live.exchange, live.routing_key, None, ts,
                 None, live.body_size, detail.get("connection"), detail.get("channel"), None, None, None,
                 None, None),
            )  # fmt: skip

    def _routed(self, event: MessageEvent, live: _Live) -> None:
        queues: list[str] = event.detail.get("queues", [])
        fanout = len(queues)
        if live.fanout is None:
            live.fanout = fanout
        live.remaining += fanout
        ts = self.clock()
        if self.capture_routing:
            message = event.message
            self._add(
                s.ROUTE_CAPTURE,
                (ts, event.vhost, event.message_id, message.exchange, message.routing_key,
                 encode_table(message.headers), list(queues)),
            )  # fmt: skip
        if self.full:
            self._event_row(event, live, s.ROUTE, fanout=fanout, ts=ts)
            # RETURNED follows at once for a mandatory unroutable publish; ROUTED says so (``mandatory``) and
            # the message's state ends here, so the return row is written now.
            if not fanout and event.detail.get("mandatory"):
                self._event_row(event, live, s.RETURN, ts=ts, reason="NO_ROUTE")
        elif not fanout:
            outcome = s.OUTCOME_RETURNED if event.detail.get("mandatory") else s.OUTCOME_UNROUTABLE
            self._delivery_row(event, live, outcome, ts, None, None, None)
        if live.remaining <= 0:
            del self.live[event.message_id]

    def _queue_fate(self, event: MessageEvent, live: _Live) -> None:
        fate, detail = event.fate, event.detail
        ts = self.clock()
        if self.full:
            reason = detail.get("reason")
            if fate is Fate.NACKED:
                reason = "requeue" if detail.get("requeue") else None
            self._event_row(
                event, live, _FULL_EVENT[fate], ts=ts, reason=reason,
                tag=detail.get("delivery_tag"), redelivered=detail.get("redelivered"),
            )  # fmt: skip
        else:
            self._compact_fate(event, live, ts)
        if fate in _FINAL:
            live.remaining -= 1
            if live.remaining <= 0:
                self.live.pop(event.message_id, None)

    def _compact_fate(self, event: MessageEvent, live: _Live, ts: int) -> None:
        fate, detail = event.fate, event.detail
        key = (event.message_id, event.queue or "")
        if fate is Fate.DELIVERED:
            self.inflight[key] = (ts, bool(detail.get("redelivered")))
            return
        if fate is Fate.ACKED or fate is Fate.NACKED or fate is Fate.REQUEUED:
            attempt = self.inflight.pop(key, None)
            if attempt is None:
                return  # REQUEUED after a NACKED: the attempt's row is written already
            reason: str | None = None
            if fate is Fate.ACKED:
                outcome = s.OUTCOME_ACK
            elif fate is Fate.NACKED:
                outcome, reason = s.OUTCOME_NACK, ("requeue" if detail.get("requeue") else None)
            else:
                outcome = s.OUTCOME_REQUEUE
            self._delivery_row(event, live, outcome, ts, attempt[0], attempt[1], reason)
            return
        final = _COMPACT_FATE.get(fate)
        if final is not None:
            self._delivery_row(event, live, final, ts, None, None, detail.get("reason"))

    # -- rows -----------------------------------------------------------------------------------------------

    def _event_row(
        self,
        event: MessageEvent,
        live: _Live,
        name: str,
        ts: int | None = None,
        fanout: int | None = None,
        reason: str | None = None,
        tag: int | None = None,
        redelivered: bool | None = None,
    ) -> None:
        self._add(
            s.EVENTS,
            (self.clock() if ts is None else ts, name, event.vhost, event.message_id, live.exchange,
             live.routing_key, event.queue, live.publish_ts, fanout, live.body_size, None, None, tag,
             redelivered, reason, None, None),
        )  # fmt: skip

    def _delivery_row(
        self,
        event: MessageEvent,
        live: _Live,
        outcome: str,
        ts: int,
        deliver_ts: int | None,
        redelivered: bool | None,
        reason: str | None,
    ) -> None:
        self._add(
            s.DELIVERIES,
            (ts, outcome, event.vhost, event.message_id, live.exchange, live.routing_key, event.queue,
             live.fanout, live.body_size, live.publish_ts, deliver_ts, redelivered, reason),
        )  # fmt: skip
