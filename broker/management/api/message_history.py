"""Message history for the web UI (WarrenMQ's own): the path of each recent message of a vhost, published →
hops through exchanges → queues → delivered to which consumer → acked / nacked / requeued / dead-lettered /
expired / dropped, with timestamps.

An observer on the broker's EventBus, attached only while some vhost records (as RabbitMQ's firehose is on
only while a vhost traces): with none, the hot path is back to one attribute test (hot-path rule 7). Memory is
bounded: the last ``capacity`` messages per vhost, each with at most ``MAX_STEPS`` steps. No payloads are
kept, only the properties the UI searches by (message_id, correlation_id) and the routing inputs.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker.core.broker import Broker
from broker.core.exchanges.exchange import Exchange
from broker.core.model.event_types import Fate, MessageEvent, TopologyEvent
from broker.core.model.message import Message
from protocol.codec import set_properties

DEFAULT_CAPACITY = 1000
MAX_STEPS = 64  # a message redelivered forever keeps its first steps and a count of the rest
_SEARCHED = ("message_id", "correlation_id")


@dataclass(slots=True)
class Record:
    id: int
    vhost: str
    exchange: str
    routing_key: str
    body_size: int
    properties: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    steps_dropped: int = 0

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "vhost": self.vhost,
            "exchange": self.exchange,
            "routing_key": self.routing_key,
            "body_size": self.body_size,
            "properties": self.properties,
            "steps": self.steps,
            "steps_dropped": self.steps_dropped,
        }


def _searched_properties(message: Message) -> dict[str, Any]:
    properties = set_properties(message.header_payload)
    return {name: str(properties[name]) for name in _SEARCHED if name in properties}


class MessageHistory:
    """The recent messages of the vhosts in ``vhosts``, newest last in each vhost's ordered dict."""

    def __init__(
        self,
        broker: Broker,
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        self.broker = broker
        self.capacity = capacity
        # The broker's clock (injectable): steps are dated as x-death times and expiry deadlines are.
        self.now_ms = broker.clock.now_ms
        self.vhosts: set[str] = set()
        self.records: dict[str, OrderedDict[int, Record]] = {}
        self._detach: Callable[[], None] | None = None

    # -- switching ------------------------------------------------------------------------------------------

    def enable(self, vhost: str) -> None:
        self.vhosts.add(vhost)
        if self._detach is None:
            self._detach = self.broker.events.attach(self)

    def disable(self, vhost: str) -> None:
        """Stop recording ``vhost`` and forget its messages; with no vhost left, detach from the bus."""
        self.vhosts.discard(vhost)
        self.records.pop(vhost, None)
        if not self.vhosts and self._detach is not None:
            self._detach()
            self._detach = None

    # -- Observer -------------------------------------------------------------------------------------------

    def on_topology(self, event: TopologyEvent) -> None:
        """Topology changes are not part of a message's history."""

    def on_message(self, event: MessageEvent) -> None:
        if event.vhost not in self.vhosts:
            return
        record = self._record(event)
        step: dict[str, Any] = {"at": self.now_ms(), "step": event.fate.value}
        if event.queue is not None:
            step["queue"] = event.queue
        detail = event.detail
        fate = event.fate
        if fate is Fate.PUBLISHED:
            step["channel"] = detail.get("channel")
            step["connection"] = detail.get("connection")
        elif fate is Fate.ROUTED:
            step["queues"] = list(detail.get("queues", ()))
            step["hops"] = self._hops(event.vhost, event.message)
        elif fate is Fate.DELIVERED:
            for key in ("consumer_tag", "delivery_tag", "redelivered", "no_ack"):
                step[key] = detail.get(key)
        elif fate is Fate.DEAD_LETTERED:
            step["reason"] = detail.get("reason")
            step["exchange"] = detail.get("exchange")
            step["queues"] = list(detail.get("queues", ()))
        elif fate in (Fate.NACKED, Fate.DROPPED, Fate.RETURNED):
            for key in ("requeue", "reason", "reply_code"):
                if key in detail:
                    step[key] = detail[key]
        if len(record.steps) < MAX_STEPS:
            record.steps.append(step)
        else:
            record.steps_dropped += 1

    def _record(self, event: MessageEvent) -> Record:
        records = self.records.setdefault(event.vhost, OrderedDict())
        record = records.get(event.message_id)
        if record is None:
            # First seen here: at its publish, or later for a message published before recording began
            # (and for a dead-lettered copy, which is a new message published by the broker).
            message = event.message
            record = Record(
                event.message_id,
                event.vhost,
                message.exchange,
                message.routing_key,
                len(message.body),
                _searched_properties(message),
            )
            records[event.message_id] = record
            if len(records) > self.capacity:
                records.popitem(last=False)
        return record

    def _hops(self, vhost_name: str, message: Message) -> list[dict[str, Any]]:
        """Exchange-to-destination hops of the routing just done, replayed by the broker's own router
        (the exchange-to-exchange bindings and alternate exchanges the ROUTED event does not list)."""
        vhost = self.broker.vhosts.get(vhost_name)
        exchange = vhost.exchanges.get(message.exchange) if vhost is not None else None
        if vhost is None or exchange is None:
            return []
        _, hops = vhost.router.trace(exchange, message)
        rows: list[dict[str, Any]] = []
        for source, destination, alternate in hops:
            # The binding keys joining the two (usually one); an alternate-exchange hop has none, and the
            # default exchange's implicit binding is the queue's name.
            if alternate:
                keys: list[str] = []
            elif source.is_default:
                keys = [message.routing_key]
            else:
                table = vhost.bindings.by_source(source)
                keys = sorted({b.routing_key for b in table if b.destination is destination})
            rows.append(
                {
                    "source": source.name,
                    "destination": str(getattr(destination, "name", "")),
                    "destination_type": "exchange" if isinstance(destination, Exchange) else "queue",
                    "alternate": alternate,
                    "binding_keys": keys,
                }
            )
        return rows

    # -- reading --------------------------------------------------------------------------------------------

    def search(
        self,
        vhost: str,
        message_id: str = "",
        correlation_id: str = "",
        routing_key: str = "",
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Newest first; each non-empty criterion must match exactly."""
        found: list[dict[str, Any]] = []
        for record in reversed(self.records.get(vhost, {}).values()):
            if message_id and record.properties.get("message_id") != message_id:
                continue
            if correlation_id and record.properties.get("correlation_id") != correlation_id:
                continue
            if routing_key and record.routing_key != routing_key:
                continue
            found.append(record.json())
            if len(found) >= limit:
                break
        return found


_HISTORIES: weakref.WeakKeyDictionary[Broker, MessageHistory] = weakref.WeakKeyDictionary()


def history_of(broker: Broker) -> MessageHistory:
    """The broker's one history (made on first use; it attaches to the bus only when a vhost is enabled)."""
    history = _HISTORIES.get(broker)
    if history is None:
        history = _HISTORIES[broker] = MessageHistory(broker)
    return history
