"""x-consistent-hash hashing modes, pure: which integer seeds the jump hash for a header or a property.

Placement itself is checked key by key against RabbitMQ in tests/compat/test_plugin_exchanges.py; header
values there can only be checked as 3.10 hashes them (the oracle is 3.10.8, followed by --profile
rabbitmq-3.10), so 3.13's reading, the default profile's, is pinned here from the plugin's source
(mc_amqpl:routing_headers), with 3.10's typed pairs (rabbit_binary_parser) per wire type."""

from __future__ import annotations

import datetime
from typing import Any

from pamqp import commands, header

from broker.core.exchanges.consistent_hash import ConsistentHashExchangeType, property_value
from broker.core.exchanges.erlang_hash import Atom, phash2
from broker.core.exchanges.jump_hash import jump_consistent_hash
from broker.core.exchanges.typed_header import header_pair
from broker.core.model.message import Message
from broker.core.model.profile import PROFILES

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


def test_under_the_3_10_profile_a_header_hashes_as_its_typed_pair() -> None:
    exchange = _exchange(**{"hash-header": "h"})
    exchange.follow_profile(PROFILES["rabbitmq-3.10"])
    for n in range(50):
        expected = _expected(phash2((Atom("longstr"), f"user-{n}".encode())))
        assert exchange.route(_message({"h": f"user-{n}"})) == expected
    assert exchange.route(_message({"other": 1})) == _expected(phash2(None))
    assert exchange.route(_message()) == _expected(phash2(None))


def test_header_pairs_keep_the_wire_type() -> None:
    """rabbit_misc:table_lookup's {Type, Value}, which the decoded headers cannot tell (5 is 5 in Python)."""
    raw_table = (
        b"\x01a"
        + b"b\xfb"  # byte -5
        + b"\x01b"
        + b"B\x05"
        + b"\x01c"
        + b"s\xff\xfe"
        + b"\x01d"
        + b"u\x00\x07"
        + b"\x01e"
        + b"I\x00\x00\x00\x05"
        + b"\x01f"
        + b"i\x00\x00\x00\x05"
        + b"\x01g"
        + b"l"
        + (5).to_bytes(8, "big")
        + b"\x01h"
        + b"t\x01"
        + b"\x01i"
        + b"D\x02\x00\x00\x04\xd2"
        + b"\x01j"
        + b"T"
        + (1_700_000_000).to_bytes(8, "big")
        + b"\x01k"
        + b"S\x00\x00\x00\x02hi"
        + b"\x01l"
        + b"x\x00\x00\x00\x01\xff"
        + b"\x01m"
        + b"V"
        + b"\x01n"
        + b"F\x00\x00\x00\x04\x01zb\x01"
        + b"\x01o"
        + b"A\x00\x00\x00\x04b\x01t\x00"
        + b"\x01a"
        + b"S\x00\x00\x00\x00"  # a second "a": table_lookup finds the first
    )
    payload = (
        (60).to_bytes(2, "big")
        + bytes(2)
        + bytes(8)
        + (1 << 13).to_bytes(2, "big")
        + len(raw_table).to_bytes(4, "big")
        + raw_table
    )
    pairs = {name: header_pair(payload, name) for name in "abcdefghijklmnoz"}
    assert pairs == {
        "a": (Atom("byte"), -5),
        "b": (Atom("unsignedbyte"), 5),
        "c": (Atom("short"), -2),
        "d": (Atom("unsignedshort"), 7),
        "e": (Atom("signedint"), 5),
        "f": (Atom("unsignedint"), 5),
        "g": (Atom("long"), 5),
        "h": (Atom("bool"), True),
        "i": (Atom("decimal"), (2, 1234)),
        "j": (Atom("timestamp"), 1_700_000_000),
        "k": (Atom("longstr"), b"hi"),
        "l": (Atom("binary"), b"\xff"),
        "m": (Atom("void"), None),
        "n": (Atom("table"), [(b"z", Atom("byte"), 1)]),
        "o": (Atom("array"), [(Atom("byte"), 1), (Atom("bool"), False)]),
        "z": None,
    }
