"""Headers exchange: x-match modes, typed value comparison, presence (void) matches and binding validation."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest

from broker.core.exchanges.headers import HeadersExchangeType
from broker.core.model.message import Message
from protocol.errors import ChannelError, ReplyCode


def publish(kind: HeadersExchangeType, headers: dict[str, Any] | None, routing_key: str = "") -> list[object]:
    return kind.route(Message("h", routing_key, b"", b"", headers=headers))


def exchange_with(bindings: dict[str, dict[str, Any]]) -> HeadersExchangeType:
    kind = HeadersExchangeType()
    for queue, arguments in bindings.items():
        kind.bind(queue, "", arguments)
    return kind


def test_java_client_routing_suite_headers_case() -> None:
    # rabbitmq-java-client functional/Routing.java headersRouting: Q1 x-match=all, Q2 x-match=any on
    # {h1: "12345", h2: "bar", h3: void}; Q1 gets only message 4, Q2 gets 1, 1b, 2, 3, 4, 5, 6 and 7.
    spec: dict[str, Any] = {"h1": "12345", "h2": "bar", "h3": None}
    kind = exchange_with({"Q1": {**spec, "x-match": "all"}, "Q2": {**spec, "x-match": "any"}})
    messages: list[tuple[str, dict[str, Any] | None]] = [
        ("0", None),
        ("0b", {}),
        ("1", {"h1": "12345"}),
        ("1b", {"h1": "12345"}),
        ("2", {"h2": "bar"}),
        ("3", {"h1": "12345", "h2": "bar"}),
        ("4", {"h1": "12345", "h2": "bar", "h3": None}),
        ("5", {"h1": "12345", "h2": "quux"}),
        ("6", {"h1": "zot", "h2": "quux", "h3": None}),
        ("7", {"h3": None}),
        ("8", {"h1": "zot", "h2": "quux"}),
    ]
    got: dict[object, list[str]] = {"Q1": [], "Q2": []}
    for label, headers in messages:
        for queue in publish(kind, headers):
            got[queue].append(label)
    assert got == {"Q1": ["4"], "Q2": ["1", "1b", "2", "3", "4", "5", "6", "7"]}


def test_missing_x_match_means_all() -> None:
    kind = exchange_with({"q": {"a": "1", "b": "2"}})
    assert publish(kind, {"a": "1"}) == []
    assert publish(kind, {"a": "1", "b": "2", "c": "3"}) == ["q"]


def test_all_with_no_keys_matches_every_message_and_any_with_none_matches_nothing() -> None:
    kind = exchange_with(
        {
            "noargs": {},
            "all_only_x": {"x-match": "all", "x-foo": "1"},
            "any_only_x": {"x-match": "any", "x-foo": "1"},
        }
    )
    assert publish(kind, None) == ["noargs", "all_only_x"]
    assert publish(kind, {"x-foo": "1"}) == ["noargs", "all_only_x"]


def test_x_keys_are_ignored_by_all_and_any_but_compared_by_the_with_x_modes() -> None:
    kind = exchange_with(
        {
            "any_with_x": {"x-match": "any-with-x", "x-foo": "1"},
            "all_with_x": {"x-match": "all-with-x", "x-foo": "1", "b": "2"},
            "all": {"x-match": "all", "x-foo": "1", "b": "2"},
        }
    )
    assert publish(kind, {"x-foo": "1"}) == ["any_with_x"]
    assert publish(kind, {"x-foo": "1", "b": "2"}) == ["any_with_x", "all_with_x", "all"]
    assert publish(kind, {"x-foo": "other", "b": "2"}) == ["all"]


def test_a_void_binding_value_only_requires_presence() -> None:
    kind = exchange_with({"q": {"a": None}})
    for value in ["x", 5, None, True, {"nested": 1}]:
        assert publish(kind, {"a": value}) == ["q"], value
    assert publish(kind, {"b": 1}) == []


# Values as decoded by pamqp; observations from RabbitMQ 3.10.8 except int-vs-float (see below).
@pytest.mark.parametrize(
    ("binding_value", "header_value", "matches"),
    [
        (5, 5, True),
        (5, "5", False),
        ("5", 5, False),
        (True, True, True),
        (True, 1, False),
        (1, True, False),
        (5, 2**40 + 5 - 2**40, True),  # integer widths are lost in decoding; RabbitMQ compares by value too
        ("abc", bytearray(b"abc"), True),  # longstr vs binary: the same Erlang binary
        (bytearray(b"abc"), "abc", True),
        (b"\xff\x00", bytearray(b"\xff\x00"), True),
        (b"\xff\x00", "\xff\x00", False),
        (datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC), 1577836800, True),
        (
            datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
            datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
            True,
        ),
        (Decimal("1.50"), Decimal("1.50"), True),
        (Decimal("1.50"), Decimal("1.5"), False),  # {2,150} =/= {1,15}
        (Decimal("5"), 5, False),
        (1.5, 1.5, True),
        (5, 5.0, False),  # 3.13+ compares with =:= ; 3.10-3.12 used == and matched (seen on 3.10.8)
        ({"b": 1}, {"b": 1}, True),
        ({"b": 1}, {"b": 2}, False),
        ([1, "x"], [1, "x"], True),
        ([1, "x"], ["x", 1], False),
        ("x", None, False),
    ],
)
def test_values_compare_by_type_and_value(binding_value: Any, header_value: Any, matches: bool) -> None:
    kind = exchange_with({"q": {"a": binding_value}})
    assert publish(kind, {"a": header_value}) == (["q"] if matches else [])


def test_the_routing_key_is_ignored() -> None:
    kind = exchange_with({"q": {"a": "1"}})
    assert publish(kind, {"a": "1"}, routing_key="anything") == ["q"]


def test_unbind_removes_only_that_binding() -> None:
    kind = HeadersExchangeType()
    kind.bind("q", "", {"a": "1"})
    kind.bind("q", "", {"x-match": "any", "b": "2"})
    kind.unbind("q", "", {"a": "1"})
    assert publish(kind, {"a": "1"}) == []
    assert publish(kind, {"b": "2"}) == ["q"]
    kind.unbind("q", "", {"nope": "1"})  # unknown: ignored
    assert publish(kind, {"b": "2"}) == ["q"]


def test_the_same_binding_twice_counts_until_both_are_removed() -> None:
    kind = HeadersExchangeType()
    kind.bind("q", "", {"a": "1"})
    kind.bind("q", "", {"a": "1"})
    assert publish(kind, {"a": "1"}) == ["q"]
    kind.unbind("q", "", {"a": "1"})
    assert publish(kind, {"a": "1"}) == ["q"]
    kind.unbind("q", "", {"a": "1"})
    assert publish(kind, {"a": "1"}) == []


# Texts as RabbitMQ 3.10.8 sent them for queue.bind to a headers exchange (pika client).
@pytest.mark.parametrize(
    ("x_match", "text"),
    [
        ("foo", 'Invalid x-match field value <<"foo">>; expected all, any, all-with-x, or any-with-x'),
        ("ALL", 'Invalid x-match field value <<"ALL">>; expected all, any, all-with-x, or any-with-x'),
        ("", "Invalid x-match field value <<>>; expected all, any, all-with-x, or any-with-x"),
        ("héllo", 'Invalid x-match field value <<"héllo">>; expected all, any, all-with-x, or any-with-x'),
        (
            'a"b\\c',
            'Invalid x-match field value <<"a\\"b\\\\c">>; expected all, any, all-with-x, or any-with-x',
        ),
        (5, "Invalid x-match field type signedint (value 5); expected longstr"),
        (70000, "Invalid x-match field type signedint (value 70000); expected longstr"),
        (True, "Invalid x-match field type bool (value true); expected longstr"),
        (None, "Invalid x-match field type void (value undefined); expected longstr"),
        (bytearray(b"all"), 'Invalid x-match field type binary (value <<"all">>); expected longstr'),
        (bytearray(b"\x01\xff"), "Invalid x-match field type binary (value <<1,255>>); expected longstr"),
        (
            [1, "a"],
            'Invalid x-match field type array (value [{signedint,1},{longstr,<<"a">>}]); expected longstr',
        ),
        ({"a": 1}, 'Invalid x-match field type table (value [{<<"a">>,signedint,1}]); expected longstr'),
    ],
)
def test_invalid_x_match_is_refused_with_rabbitmq_text(x_match: Any, text: str) -> None:
    kind = HeadersExchangeType()
    with pytest.raises(ChannelError) as raised:
        kind.bind("q", "", {"x-match": x_match, "a": "1"})
    assert raised.value.code == ReplyCode.PRECONDITION_FAILED
    assert raised.value.text == text
    assert publish(kind, {"a": "1"}) == []  # nothing was bound


@pytest.mark.parametrize("mode", ["all", "any", "all-with-x", "any-with-x"])
def test_every_documented_x_match_mode_is_accepted(mode: str) -> None:
    HeadersExchangeType().bind("q", "", {"x-match": mode})
