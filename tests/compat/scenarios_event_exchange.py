"""The event-exchange scenario run against both brokers: topology changes made by one client while a capture
queue bound to ``amq.rabbitmq.event`` collects the events; each event reduced to what must match."""

from __future__ import annotations

import time
from typing import Any

import pika

EVENT_EXCHANGE = "amq.rabbitmq.event"
# Node- and run-specific values: compared by type only.
_VOLATILE = {"timestamp_in_ms", "channel"}


def _shape(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return value


def _event(method: Any, properties: Any, body: bytes) -> dict[str, Any]:
    headers = dict(properties.headers or {})
    fields = {
        key: (type(value).__name__ if key in _VOLATILE else _shape(value)) for key, value in headers.items()
    }
    if fields.get("owner_pid"):
        fields["owner_pid"] = "a pid"  # an exclusive queue's owner: node-specific
    return {
        "routing_key": method.routing_key,
        "headers": dict(sorted(fields.items())),
        # pika decodes an AMQP long (l) as its ``long``, a signedint (I) as ``int``: the wire types show.
        "types": {key: type(value).__name__ for key, value in sorted(headers.items())},
        "delivery_mode": properties.delivery_mode,
        "timestamp_set": properties.timestamp is not None,
        "timestamp_matches_ms": properties.timestamp == headers.get("timestamp_in_ms", 0) // 1000,
        "other_properties": [
            name
            for name in (
                "content_type",
                "content_encoding",
                "priority",
                "correlation_id",
                "reply_to",
                "expiration",
                "message_id",
                "type",
                "user_id",
                "app_id",
            )
            if getattr(properties, name, None) is not None
        ],
        "body": body,
    }


def run_event_scenario(url: str) -> list[dict[str, Any]]:
    """Declare, bind, consume, cancel, unbind and delete; the events seen, in order."""
    watcher = pika.BlockingConnection(pika.URLParameters(url))
    try:
        watch = watcher.channel()
        capture = watch.queue_declare("ee.capture", exclusive=True).method.queue
        for key in ("queue.#", "exchange.#", "binding.#", "consumer.#"):
            watch.queue_bind(capture, EVENT_EXCHANGE, key)
        actor = pika.BlockingConnection(pika.URLParameters(url))
        try:
            ch = actor.channel()
            ch.exchange_declare("ee.x", "topic", durable=True, arguments={"alternate-exchange": "ee.ae"})
            ch.queue_declare("ee.q", arguments={"x-max-length": 5})
            ch.queue_bind("ee.q", "ee.x", "k.#", arguments={"a": 1})
            ch.exchange_bind("amq.fanout", "ee.x", "e2e")
            tag = ch.basic_consume("ee.q", lambda *_: None, consumer_tag="ee.tag", exclusive=True)
            ch.basic_cancel(tag)
            ch.exchange_unbind("amq.fanout", "ee.x", "e2e")
            ch.queue_unbind("ee.q", "ee.x", "k.#", arguments={"a": 1})
            ch.queue_delete("ee.q")
            ch.exchange_delete("ee.x")
            ch.queue_declare("ee.auto", auto_delete=True)
            ch.basic_cancel(ch.basic_consume("ee.auto", lambda *_: None, consumer_tag="ee.auto-tag"))
        finally:
            actor.close()
        closing = pika.BlockingConnection(pika.URLParameters(url))
        ch = closing.channel()
        ch.queue_declare("ee.excl", exclusive=True)
        ch.basic_consume("ee.excl", lambda *_: None, consumer_tag="ee.excl-tag")
        closing.close()  # the broker removes the consumer and deletes the queue
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            method, properties, body = watch.basic_get(capture, auto_ack=True)
            if method is None:
                # RabbitMQ deletes an exclusive queue asynchronously after its owner closes.
                if events and events[-1]["headers"].get("name") == "ee.excl":
                    break
                watcher.sleep(0.05)
                continue
            events.append(_event(method, properties, body))
        return events
    finally:
        watcher.close()
