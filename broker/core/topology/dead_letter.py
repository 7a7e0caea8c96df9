"""Dead-lettering: the x-death history RabbitMQ writes, the copy republished to the DLX, cycle detection.

Header layout follows RabbitMQ 3.13+ (mc_amqpl:deaths_to_headers, rabbit_dead_letter): ``x-death`` is an
array of tables, most recent death first, one per (queue, reason) with a ``count``; each table holds
[original-expiration], count (long), reason, queue, time (timestamp, seconds, of the FIRST such death),
exchange, routing-keys (array). ``x-first-death-{reason,queue,exchange}`` are written once,
``x-last-death-{reason,queue,exchange}`` on every death (3.13+; 3.10 has no x-last-death-*). The expiration
property is removed and kept as ``original-expiration``. Header tables come out sorted by key, as
rabbit_misc:set_table_value leaves them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from broker.core.events.events import EventBus
from broker.core.exchanges.exchange import Exchange
from broker.core.model.clock import Clock
from broker.core.model.event_types import Fate
from broker.core.model.message import Message
from broker.core.model.profile import Profile
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.unacked import Delivery

# (content-header payload, headers to set — replacing equal keys —, headers to remove, clear expiration)
# -> the new payload. Implemented by the session layer (broker.session.properties), injected into the core.
HeaderRewriter = Callable[[bytes, Mapping[str, Any], Sequence[str], bool], bytes]

REJECTED = "rejected"


class DeadLetterHost(Protocol):
    """What dead-lettering needs from the vhost the messages die in
    (`broker.core.topology.vhost.VirtualHost`)."""

    @property
    def name(self) -> str: ...

    @property
    def events(self) -> EventBus: ...

    @property
    def exchanges(self) -> Mapping[str, Exchange]: ...

    @property
    def rewrite_header(self) -> HeaderRewriter | None: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def profile(self) -> Profile: ...

    @property
    def dead_lettered(self) -> dict[tuple[str, str, str], int]:
        """Messages dead-lettered by (reason, queue type, strategy): the global dead_lettered counters."""
        ...

    def route_keys(self, exchange: Exchange, message: Message, keys: list[str]) -> list[Queue]:
        """The queues ``message`` reaches through ``exchange`` with each of ``keys`` as its routing key."""
        ...


def header_routes(headers: Mapping[str, Any] | None, key: str) -> list[str]:
    """The routing keys in a CC or BCC header (rabbit_basic:header_routes: an array of longstr)."""
    if not headers:
        return []
    value = headers.get(key)
    if not isinstance(value, list):
        return []
    return [
        item.decode() if isinstance(item, bytes) else item for item in value if isinstance(item, str | bytes)
    ]


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def record_death(
    headers: Mapping[str, Any] | None,
    message: Message,
    queue_name: str,
    reason: str,
    now_ms: int,
) -> dict[str, Any]:
    """The headers to set on the dead-lettered copy of ``message`` (x-death and the first/last headers)."""
    old = headers or {}
    deaths = [dict(entry) for entry in old.get("x-death") or [] if isinstance(entry, Mapping)]
    match = next(
        (
            entry
            for entry in deaths
            if _text(entry.get("queue")) == queue_name and _text(entry.get("reason")) == reason
        ),
        None,
    )
    if match is not None:
        deaths.remove(match)
        count = match.get("count", 0)
        match["count"] = (count if isinstance(count, int) else 0) + 1
        entry = match
    else:
        entry = {}
        if message.expiration is not None:
            entry["original-expiration"] = message.expiration
        entry.update(
            {
                "count": 1,
                "reason": reason,
                "queue": queue_name,
                "time": datetime.datetime.fromtimestamp(now_ms // 1000, tz=datetime.UTC),
                "exchange": message.exchange,
                "routing-keys": [message.routing_key, *header_routes(old, "CC")],
            }
        )
    result: dict[str, Any] = {"x-death": [entry, *deaths]}
    if "x-first-death-reason" not in old:
        result["x-first-death-exchange"] = message.exchange
        result["x-first-death-queue"] = queue_name
        result["x-first-death-reason"] = reason
    result["x-last-death-exchange"] = message.exchange
    result["x-last-death-queue"] = queue_name
    result["x-last-death-reason"] = reason
    return result


def merged_headers(
    headers: Mapping[str, Any] | None, updates: Mapping[str, Any], remove: Sequence[str] = ()
) -> dict[str, Any]:
    """The decoded table the rewriter produces: updates applied, ``remove`` dropped, keys sorted."""
    merged = {key: value for key, value in (headers or {}).items() if key not in remove}
    merged.update(updates)
    return dict(sorted(merged.items(), key=lambda item: item[0].encode()))


def dead_letter_message(
    message: Message,
    queue_name: str,
    reason: str,
    dead_letter_exchange: str,
    dead_letter_routing_key: str | None,
    now_ms: int,
    rewrite: HeaderRewriter,
    keep_cc: bool = False,
    from_quorum: bool = False,
) -> tuple[Message, list[str]]:
    """The copy of ``message`` published to the DLX, and the routing keys to route it with.

    Without x-dead-letter-routing-key the original keys are used (the publish key and CC); with one, only
    that key, and the CC header is removed (rabbit_dead_letter:make_msg, 3.10) or, with ``keep_cc``, kept
    but not routed by (rabbit_dead_letter:publish of 4.0 sets the routing keys alone). A quorum queue's
    x-delivery-count goes: RabbitMQ adds it to deliveries, never to the message it keeps, so what it
    dead-letters has none (3.10.8 and 4.0.5 alike).
    """
    updates = record_death(message.headers, message, queue_name, reason, now_ms)
    remove: tuple[str, ...] = ()
    if dead_letter_routing_key is None:
        keys = [message.routing_key, *header_routes(message.headers, "CC")]
    else:
        keys = [dead_letter_routing_key]
        if not keep_cc:
            remove = ("CC",)
    if from_quorum and "x-delivery-count" in (message.headers or {}):
        remove = (*remove, "x-delivery-count")
    payload = rewrite(message.header_payload, updates, remove, True)
    copy = Message(
        dead_letter_exchange,
        keys[0],
        payload,
        message.body,
        merged_headers(message.headers, updates, remove),
        message.delivery_mode,
        message.priority,
        None,
    )
    return copy, keys


def is_cycle(reason: str, dead_lettered: Message, queue_name: str) -> bool:
    """rabbit_dead_letter:is_cycle: routing back to a queue already in the history is a cycle when no death
    from the most recent one back to that queue's latest was a rejection (a cycle clients drive is fine)."""
    if reason == REJECTED:
        return False
    deaths = (dead_lettered.headers or {}).get("x-death") or []
    for entry in deaths:
        if not isinstance(entry, Mapping):
            return False
        if _text(entry.get("reason")) == REJECTED:
            return False
        if _text(entry.get("queue")) == queue_name:
            return True
    return False


def publish_dead_letters(vhost: DeadLetterHost, queue: Queue, envelopes: list[Envelope], reason: str) -> None:
    """Dead-letter (or drop) messages leaving ``queue``: events, x-death, routing through the DLX.

    A DLX that does not exist drops the message silently, as RabbitMQ does; queues that would close a
    dead-letter cycle are left out (RabbitMQ logs the cycle once and drops the message for them).
    """
    if queue.store is not None and reason != REJECTED:
        queue.store.messages_removed(queue, envelopes)  # rejections were removed when settled
    features = queue.features
    dlx_name = features.settings.dead_letter_exchange if features is not None else None
    events = vhost.events
    observed = bool(events.observers)
    if observed and reason == "expired":
        for envelope in envelopes:
            events.message(Fate.EXPIRED, vhost.name, envelope.message, queue.name)
    # rabbit_global_counters: per reason, queue type and strategy ("disabled" without a dead-letter exchange).
    kind = features.settings.queue_type if features is not None else "classic"
    key = (reason, kind, "disabled" if dlx_name is None else "at_most_once")
    vhost.dead_lettered[key] = vhost.dead_lettered.get(key, 0) + len(envelopes)
    exchange = vhost.exchanges.get(dlx_name) if dlx_name is not None else None
    rewrite = vhost.rewrite_header
    if exchange is None or rewrite is None or features is None:
        if observed and reason != REJECTED:
            for envelope in envelopes:
                events.message(Fate.DROPPED, vhost.name, envelope.message, queue.name, reason=reason)
        return
    now_ms = vhost.clock.now_ms()
    for envelope in envelopes:
        copy, keys = dead_letter_message(
            envelope.message,
            queue.name,
            reason,
            exchange.name,
            features.settings.dead_letter_routing_key,
            now_ms,
            rewrite,
            vhost.profile.dead_letter_keeps_cc,
            kind == "quorum",
        )
        targets = [
            target
            for target in vhost.route_keys(exchange, copy, keys)
            if not is_cycle(reason, copy, target.name)
        ]
        if observed:
            events.message(
                Fate.DEAD_LETTERED,
                vhost.name,
                envelope.message,
                queue.name,
                reason=reason,
                exchange=exchange.name,
                queues=[target.name for target in targets],
            )
        for target in targets:
            target.enqueue(copy)


def reject_deliveries(deliveries: list[Delivery]) -> None:
    """basic.reject / basic.nack without requeue: dead-letter with reason ``rejected`` where a DLX is set."""
    for delivery in deliveries:
        queue = delivery.queue
        features = queue.features
        if (
            features is not None
            and features.settings.dead_letter_exchange is not None
            and queue.host is not None
            and not queue.deleted
        ):
            queue.host.dead_letter(queue, [delivery.envelope], REJECTED)
