"""x-consistent-hash hashing modes, pure: which integer seeds the jump hash for a header or a property.

Placement itself is checked key by key against RabbitMQ in tests/compat/test_plugin_exchanges.py; header
values there can only be checked as 3.10 hashes them (the oracle is 3.10.8), so 3.13's reading, which
WarrenMQ follows, is pinned here from the plugin's source (mc_amqpl:routing_headers)."""

from __future__ import annotations

import datetime
from typing import Any

from pamqp import commands, header

from broker.core.exchanges.consistent_hash import ConsistentHashExchangeType, property_value
from broker.core.exchanges.erlang_hash import phash2
from broker.core.exchanges.jump_hash import jump_consistent_hash
from broker.core.message import Message

QUEUES = [f"q{n}" for n in range(4)]


def _exchange(**arguments: str) -> ConsistentHashExchangeType:
    exchange = ConsistentHashExchangeType()
    exchange.configure(arguments)
    for queue in QUEUES:
        exchange.bind(queue, "10", {})
    return exchange


def _expected(seed: int) -> tuple[object, ...]:
    buckets = [queue for queue in QUEUES for _ in range(10)]
    return (buckets[jump_consistent_hash(seed, len(buckets))],)


def _message(headers: dict[str, Any] | None = None, **properties: Any) -> Message:
    """A message whose raw content-header payload carries ``properties``, as the session keeps it."""
    payload = header.ContentHeader(0, 0, commands.Basic.Properties(headers=headers, **properties)).marshal()
    return Message("x", "rk", payload, b"", headers)


def test_a_header_string_hashes_as_a_binary_and_an_integer_seeds_the_jump_hash_itself() -> None:
    exchange = _exchange(**{"hash-header": "h"})
    for n in range(50):
        assert exchange.route(_message({"h": f"user-{n}"})) == _expected(phash2(f"user-{n}".encode()))
        assert exchange.route(_message({"h": n * 7919})) == _expected(n * 7919)


def test_a_header_timestamp_hashes_as_milliseconds_and_a_missing_header_as_undefined() -> None:
    exchange = _exchange(**{"hash-header": "h"})
    moment = datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=datetime.UTC)
    assert exchange.route(_message({"h": moment})) == _expected(int(moment.timestamp()) * 1000)
    assert exchange.route(_message({"other": 1})) == _expected(phash2(None))
    assert exchange.route(_message()) == _expected(phash2(None))


def test_properties_are_read_from_the_raw_content_header() -> None:
    stamp = datetime.datetime.fromtimestamp(1_700_000_000, datetime.UTC)
    message = _message({"a": "b"}, correlation_id="c-1", message_id="m-1", timestamp=stamp, priority=3)
    assert property_value(message.header_payload, "correlation_id") == b"c-1"
    assert property_value(message.header_payload, "message_id") == b"m-1"
    assert property_value(message.header_payload, "timestamp") == b"1700000000"
    assert property_value(_message().header_payload, "message_id") is None
