"""Definitions JSON topologies route like the broker: E2E, AEs (argument and policy), typed headers."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.model.typed_json import NESTED_MAX_DEPTH, decode_table, encode_table
from broker.core.topology.definitions import DefinitionsError, load_definitions


def exchange(name: str, kind: str, **arguments: Any) -> dict[str, Any]:
    return {
        "name": name,
        "vhost": "/",
        "type": kind,
        "durable": True,
        "auto_delete": False,
        "internal": False,
        "arguments": arguments,
    }


def queue(name: str) -> dict[str, Any]:
    return {"name": name, "vhost": "/", "durable": True, "auto_delete": False, "arguments": {}}


def bind(
    source: str, destination: str, key: str = "", kind: str = "queue", **arguments: Any
) -> dict[str, Any]:
    return {
        "source": source,
        "vhost": "/",
        "destination": destination,
        "destination_type": kind,
        "routing_key": key,
        "arguments": arguments,
    }


DEFS = {
    "vhosts": [{"name": "/"}],
    "exchanges": [
        exchange("events", "topic", **{"alternate-exchange": "unrouted"}),
        exchange("unrouted", "fanout"),
        exchange("audit", "fanout"),
        exchange("h", "headers"),
    ],
    "queues": [queue(name) for name in ("q.eu", "q.all", "q.lost", "q.audit", "q.h")],
    "bindings": [
        bind("events", "q.eu", "eu.#"),
        bind("events", "q.all", "#.created"),
        bind("unrouted", "q.lost"),
        bind("events", "audit", "eu.audit.*", kind="exchange"),
        bind("audit", "q.audit"),
        bind("h", "q.h", "", "queue", **{"x-match": "all", "n": 5}),
    ],
}


def test_routes_topic_e2e_and_the_default_exchange() -> None:
    topology = load_definitions(DEFS)
    assert sorted(topology.route("/", "events", "eu.order.created") or []) == ["q.all", "q.eu"]
    assert sorted(topology.route("/", "events", "eu.audit.x") or []) == ["q.audit", "q.eu"]
    assert topology.route("/", "", "q.h") == ["q.h"]


def test_alternate_exchange_takes_what_the_exchange_did_not_route() -> None:
    assert load_definitions(DEFS).route("/", "events", "us.order.paid") == ["q.lost"]


def test_policy_alternate_exchange_applies_with_the_highest_priority_and_the_argument_wins() -> None:
    defs = json.loads(json.dumps(DEFS))
    defs["exchanges"].append(exchange("plain", "direct"))
    defs["policies"] = [
        {
            "vhost": "/",
            "name": "low",
            "pattern": "^pla",
            "apply-to": "exchanges",
            "priority": 1,
            "definition": {"alternate-exchange": "audit"},
        },
        {
            "vhost": "/",
            "name": "high",
            "pattern": "ain$",
            "apply-to": "all",
            "priority": 5,
            "definition": {"alternate-exchange": "unrouted"},
        },
        {
            "vhost": "/",
            "name": "other",
            "pattern": "^events$",
            "apply-to": "exchanges",
            "priority": 9,
            "definition": {"alternate-exchange": "audit"},
        },
    ]
    topology = load_definitions(defs)
    assert topology.route("/", "plain", "k") == ["q.lost"]
    assert topology.route("/", "events", "us.x") == ["q.lost"]  # the exchange's own argument wins


def test_headers_matching_is_typed() -> None:
    topology = load_definitions(DEFS)
    assert topology.route("/", "h", "", {"n": 5}) == ["q.h"]
    assert topology.route("/", "h", "", {"n": "5"}) == []


def test_missing_vhost_or_exchange_routes_nowhere() -> None:
    topology = load_definitions(DEFS)
    assert topology.route("/", "missing", "k") is None
    assert topology.route("/other", "events", "k") is None


def test_per_vhost_export_without_vhost_fields_uses_the_default_vhost() -> None:
    defs = {
        "exchanges": [{"name": "x", "type": "direct"}],
        "queues": [{"name": "q"}],
        "bindings": [{"source": "x", "destination": "q", "destination_type": "queue", "routing_key": "k"}],
    }
    assert load_definitions(defs, default_vhost="v1").route("v1", "x", "k") == ["q"]


@pytest.mark.parametrize(
    ("document", "text"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ({"queues": {"name": "q"}}, "'queues' must be a list of objects"),
        ({"exchanges": [{"name": "x"}]}, "needs a string 'type'"),
        ({"exchanges": [{"name": "x", "type": "nope"}]}, "unknown exchange type 'nope'"),
        ({"bindings": [bind("missing", "q")]}, "no exchange 'missing'"),
        (
            {"exchanges": [exchange("x", "direct")], "bindings": [bind("x", "q", kind="stream")]},
            "unknown destination_type",
        ),
    ],
)
def test_malformed_definitions_raise_a_clear_error(document: Any, text: str) -> None:
    with pytest.raises(DefinitionsError) as error:
        load_definitions(document)
    assert text in str(error.value)


amqp_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary().map(bytearray)
    | st.decimals(allow_nan=False, allow_infinity=False, places=2)
    | st.datetimes(timezones=st.just(datetime.UTC)),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=8), amqp_values, max_size=5))
def test_typed_json_round_trips_values_and_their_types(table: dict[str, Any]) -> None:
    decoded = decode_table(encode_table(table))
    assert decoded == table
    assert encode_table(decoded) == encode_table(table)  # the types survived, not just the values


@given(st.dictionaries(st.text(max_size=8), amqp_values, max_size=5), st.integers(1, 3))
def test_typed_json_flat_form_round_trips_what_the_nested_form_does(table: dict[str, Any], deep: int) -> None:
    # Wrapped below NESTED_MAX_DEPTH levels, the table is written flat; the values and types come back.
    wrapped: dict[str, Any] = table
    for _ in range(NESTED_MAX_DEPTH + deep):
        wrapped = {"k": wrapped, "n": [1, "1"]}
    text = encode_table(wrapped)
    assert text is not None
    assert text.startswith('{"flat":')
    decoded = decode_table(text)
    assert decoded == wrapped
    assert encode_table(decoded) == text


def test_typed_json_stores_a_table_nested_far_past_the_json_recursion_limit() -> None:
    # RabbitMQ accepts 10,000-deep argument tables; the nested JSON form gives up near 330 table levels.
    table: dict[str, Any] = {}
    node = table
    for _ in range(10_000):
        node["k"] = node = {}
    node["leaf"] = [bytearray(b"x"), Decimal("2.5")]
    decoded = decode_table(encode_table(table))
    assert decoded is not None
    levels, node = 0, decoded
    while "k" in node:
        node, levels = node["k"], levels + 1
    assert levels == 10_000
    assert node == {"leaf": [bytearray(b"x"), Decimal("2.5")]}


def test_typed_json_keeps_integer_and_string_apart() -> None:
    assert decode_table(encode_table({"a": 5, "b": "5", "c": Decimal("1.50")})) == {
        "a": 5,
        "b": "5",
        "c": Decimal("1.50"),
    }
    assert decode_table(None) is None
