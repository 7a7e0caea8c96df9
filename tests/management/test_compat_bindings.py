"""Differential: the bindings API against a private RabbitMQ node (management plugin) and WarrenMQ. Every
binding listing's order (RabbitMQ sorts by vhost, source, destination, routing key, properties key), the
properties_key of bindings with arguments of every JSON type and of every AMQP type pika sends (args_hash is
erlang:phash2 of the typed table), and which refusal a POST meets first."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.management.http_differential import GUEST, Pair, Step, differences, start_pair

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]

V = "bind-v"
B = f"/api/bindings/{V}"
LIMITED = ("bind-limited", "p")  # write on q1 only, read on bx only
TOPICAL = ("bind-topical", "p")  # everything, but topic read on bx only for "a.*" keys
ARGS = {
    "x-int": 1,
    "x-neg": -7,
    "x-big": 300000000000,
    "x-str": "s é",
    "x-bool": True,
    "x-float": 1.5,
    "nested": {"z": 1, "a": "b", "m": {"k": [True]}},
    "arr": [1, "two", False, 2.25],
}

SETUP = [
    Step("PUT", f"/api/vhosts/{V}"),
    Step("PUT", f"/api/exchanges/{V}/bx", {"type": "topic"}),
    Step("PUT", f"/api/exchanges/{V}/by", {"type": "direct"}),
    Step("PUT", f"/api/exchanges/{V}/bh", {"type": "headers"}),
    # A queue and an exchange both named "by": rows that tie on every sort key but destination_type.
    *(Step("PUT", f"/api/queues/{V}/{name}", {}) for name in ("q1", "q2", "by", "b%20q%C3%A9")),
    Step("PUT", "/api/users/bind-limited", {"password": "p", "tags": "management"}),
    Step("PUT", f"/api/permissions/{V}/bind-limited", {"configure": ".*", "write": "^q1$", "read": "^bx$"}),
    Step("PUT", "/api/users/bind-topical", {"password": "p", "tags": "management"}),
    Step("PUT", f"/api/permissions/{V}/bind-topical", {"configure": ".*", "write": ".*", "read": ".*"}),
    Step("PUT", f"/api/topic-permissions/{V}/bind-topical", {"exchange": "bx", "write": ".*", "read": "^a"}),
]

POSTS = [
    Step("POST", f"{B}/e/bx/q/q1", {"routing_key": "b.#"}, headers=("Location",)),
    Step("POST", f"{B}/e/bx/q/q1", {"routing_key": "a.*", "arguments": ARGS}, headers=("Location",)),
    Step("POST", f"{B}/e/bx/q/q1", {"routing_key": "a.*", "arguments": {"k": "v"}}, headers=("Location",)),
    # (RabbitMQ 3.10.8 answers 500 for some keys with arguments, e.g. "a.~ x" or "é", and every listing that
    # would show the binding fails from then on: pack_binding_props appends a string to what quote_binding's
    # re:replace may return as a binary. Not copied.)
    Step("POST", f"{B}/e/bx/q/q1", {"routing_key": "a~", "arguments": {"n": 0}}, headers=("Location",)),
    Step("POST", f"{B}/e/bx/q/q1", {"routing_key": "a b", "arguments": {"n": 0}}, headers=("Location",)),
    Step("POST", f"{B}/e/bx/q/q2", {"routing_key": "a.*"}, headers=("Location",)),
    Step("POST", f"{B}/e/bx/q/by", {"routing_key": "k"}, headers=("Location",)),
    Step("POST", f"{B}/e/bx/e/by", {"routing_key": "k"}, headers=("Location",)),
    Step("POST", f"{B}/e/bx/q/b%20q%C3%A9", {"routing_key": ""}, headers=("Location",)),
    Step("POST", f"{B}/e/by/q/q2", {"routing_key": "Z"}, headers=("Location",)),
    Step("POST", f"{B}/e/by/q/q2", {"routing_key": "Y", "arguments": {}}, headers=("Location",)),
    Step("POST", f"{B}/e/bh/q/q2", {"arguments": {"x-match": "any", "h": "v"}}, headers=("Location",)),
    Step("POST", f"{B}/e/bh/q/q2", {"arguments": {"x-match": "all", "h": 5}}, headers=("Location",)),
]

LISTINGS = [
    Step("GET", B, values=("*",)),
    Step("GET", f"{B}?sort_reverse=true", values=("*",)),
    Step("GET", f"{B}?sort=destination_type", values=("*",)),
    Step("GET", f"{B}?columns=routing_key,properties_key", values=("*",)),
    Step("GET", f"{B}?page=2&page_size=3", values=("*",)),
    Step("GET", f"{B}/e/bx/q/q1", values=("*",)),
    Step("GET", f"/api/exchanges/{V}/bx/bindings/source", values=("*",)),
    Step("GET", f"/api/exchanges/{V}/by/bindings/destination", values=("*",)),
    Step("GET", f"/api/queues/{V}/q1/bindings", values=("*",)),
    Step("GET", f"/api/queues/{V}/q2/bindings", values=("*",)),
]

# Which refusal comes first (rabbit_channel:binding_action after the vhost and the body): write on the
# destination, the default exchange, read on the source, the topic read permission, then existence.
REFUSALS = [
    # A body that is not a JSON object, or arguments that are not an object of non-null values: 500, empty.
    Step("POST", "/api/bindings/no-vhost/e/bx/q/q1", raw=b"{bad", values=("*",), headers=("content-length",)),
    Step("POST", f"{B}/e/nosuch/q/nosuch", raw=b"{bad", values=("*",)),
    Step("POST", f"{B}/e/nosuch/q/nosuch", raw=b"[1]", values=("*",)),
    Step("POST", f"{B}/e/bx/q/q1", {"arguments": {"a": None}}, values=("*",)),
    Step("POST", f"{B}/e/bx/q/q1", {"arguments": {"a": {"b": [None]}}}, values=("*",)),
    Step("POST", f"{B}/e/bx/q/q1", {"arguments": None}, values=("*",)),
    Step("POST", f"{B}/e/bx/q/q1", {"arguments": "s"}, values=("*",)),
    Step("POST", "/api/bindings/no-vhost/e/bx/q/q1", {"routing_key": "k"}, values=("*",)),
    Step("POST", f"{B}/e/bx/q/q1", raw=b"", headers=("Location",)),
    Step("POST", f"{B}/e/nosuch/q/nosuch", {"routing_key": "k"}, user=LIMITED, values=("*",)),
    Step("POST", f"{B}/e/nosuch/q/q1", {"routing_key": "k"}, user=LIMITED, values=("*",)),
    Step("POST", f"{B}/e/bx/q/nosuch", {"routing_key": "k"}, user=LIMITED, values=("*",)),
    Step("POST", f"{B}/e/amq.default/q/nosuch", {"routing_key": "k"}, values=("*",)),
    Step("POST", f"{B}/e/bx/e/amq.default", {"routing_key": "k"}, values=("*",)),
    Step("POST", f"{B}/e/nosuch/q/nosuch", {"routing_key": "k"}, values=("*",)),
    Step("POST", f"{B}/e/nosuch/e/nosuch2", {"routing_key": "k"}, values=("*",)),
    Step("POST", f"{B}/e/bx/q/nosuch", {"routing_key": "k"}, values=("*",)),
    Step("POST", f"{B}/e/bx/e/nosuch", {"routing_key": "k"}, values=("*",)),
    Step("POST", f"{B}/e/bx/q/nosuch", {"routing_key": "z"}, user=TOPICAL, values=("*",)),
    Step("POST", f"{B}/e/bx/q/q2", {"routing_key": "z"}, user=TOPICAL, values=("*",)),
    Step("POST", f"{B}/e/bh/q/q2", {"arguments": {"x-match": "bogus"}}, values=("*",)),
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from start_pair(tmp_path_factory.mktemp("rabbitmq-bindings"))


def test_binding_listings_are_sorted_and_keyed_as_rabbitmq_does(pair: Pair) -> None:
    found = differences(*pair.bases, [*SETUP, *POSTS, *LISTINGS])
    assert found == [], "\n".join(found)


def test_one_binding_is_found_and_deleted_by_rabbitmqs_properties_key(pair: Pair) -> None:
    rabbit_base, _ = pair.bases
    differences(*pair.bases, [*SETUP, *POSTS])  # idempotent: the listing test may not have run
    rows = requests.get(f"{rabbit_base}{B}/e/bx/q/q1", auth=GUEST, timeout=10).json()
    keys = [row["properties_key"] for row in rows if row["arguments"]]
    assert len(keys) == 4
    steps = [Step("GET", f"{B}/e/bx/q/q1/{key.replace('%', '%25')}", values=("*",)) for key in keys]
    steps += [Step("DELETE", f"{B}/e/bx/q/q1/{keys[0].replace('%', '%25')}", values=("*",))]
    steps += [Step("GET", f"{B}/e/bx/q/q1", values=("*",))]
    found = differences(*pair.bases, steps)
    assert found == [], "\n".join(found)


def test_post_refusals_come_in_rabbitmqs_order(pair: Pair) -> None:
    found = differences(*pair.bases, [*SETUP, *POSTS, *REFUSALS])
    assert found == [], "\n".join(found)


# Arguments as pika sends them: int as signedint (long past 32 bits), bytes as binary, Decimal,
# datetime, None (void), nested tables and arrays.
PIKA_ARGUMENTS: list[dict[str, Any]] = [
    {"i": 5, "s": "str"},
    {"big": 2**40, "neg": -(2**31)},
    {"b": True, "x": b"\x00\xff", "n": None},
    {"t": {"y": 1, "x": "a"}, "a": [1, "x", [2]]},
    {"d": Decimal("1.25"), "ts": datetime.datetime(2026, 11, 25, 9, 30, tzinfo=datetime.UTC)},
]


def test_bindings_made_by_a_client_carry_rabbitmqs_properties_key(pair: Pair) -> None:
    listings = []
    for base, port in zip(pair.bases, pair.amqp_ports, strict=True):
        connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
        channel = connection.channel()
        channel.exchange_declare("pika-x", "direct")
        channel.queue_declare("pika-q")
        for index, arguments in enumerate(PIKA_ARGUMENTS):
            channel.queue_bind("pika-q", "pika-x", f"k{index}", arguments=arguments)
        connection.close()
        rows = requests.get(f"{base}/api/queues/%2F/pika-q/bindings", auth=GUEST, timeout=10).json()
        listings.append([(row["routing_key"], row["properties_key"]) for row in rows])
    assert listings[0] == listings[1]
    assert all("~" in key for routing_key, key in listings[0] if routing_key.startswith("k"))
