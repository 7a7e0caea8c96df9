"""Direct, fanout and topic exchange types: routing state built at bind time, undone exactly at unbind."""

from __future__ import annotations

import pytest

from broker.core.exchanges.base import ExchangeType
from broker.core.exchanges.default import DefaultExchangeType
from broker.core.exchanges.direct import DirectExchangeType
from broker.core.exchanges.fanout import FanoutExchangeType
from broker.core.exchanges.registry import EXCHANGE_TYPES
from broker.core.exchanges.topic import ROUTE_CACHE_SIZE, TopicExchangeType
from broker.core.model.message import Message
from protocol.errors import ChannelError, ReplyCode


def msg(routing_key: str) -> Message:
    return Message("x", routing_key, b"", b"")


def test_registry_holds_the_four_amqp_types_and_the_plugin_types() -> None:
    amqp = {"direct", "fanout", "topic", "headers"}
    assert set(EXCHANGE_TYPES) == amqp | {
        "x-consistent-hash",
        "x-delayed-message",
        "x-random",
        "x-recent-history",
        "x-modulus-hash",
    }
    for name, cls in EXCHANGE_TYPES.items():
        assert cls.type_name == name
    for name in amqp:
        EXCHANGE_TYPES[name].validate(
            {"anything": 1, "alternate-exchange": "ae"}
        )  # RabbitMQ's four types accept any args


def test_direct_routes_on_exact_key_only() -> None:
    kind = DirectExchangeType()
    kind.bind("Q1", "orange", {})
    kind.bind("Q2", "black", {})
    kind.bind("Q2", "green", {})
    assert kind.route(msg("orange")) == ("Q1",)
    assert kind.route(msg("black")) == ("Q2",)
    assert kind.route(msg("green")) == ("Q2",)
    assert kind.route(msg("Orange")) == ()
    assert kind.route(msg("")) == ()


def test_direct_binding_with_empty_key_matches_empty_routing_key() -> None:
    kind = DirectExchangeType()
    kind.bind("q", "", {})
    assert kind.route(msg("")) == ("q",)


def test_direct_keeps_a_destination_until_its_last_binding_on_the_key_goes() -> None:
    kind = DirectExchangeType()
    kind.bind("q", "k", {})
    kind.bind("q", "k", {"a": 1})  # another binding in RabbitMQ: the arguments differ
    kind.bind("other", "k", {})
    assert kind.route(msg("k")) == ("q", "other")
    kind.unbind("q", "k", {})
    assert kind.route(msg("k")) == ("q", "other")
    kind.unbind("q", "k", {"a": 1})
    assert kind.route(msg("k")) == ("other",)
    kind.unbind("other", "k", {})
    assert kind.route(msg("k")) == ()
    kind.unbind("other", "k", {})  # unknown: ignored
    kind.unbind("nobody", "nokey", {})


def test_fanout_ignores_the_routing_key_and_lists_each_destination_once() -> None:
    kind = FanoutExchangeType()
    kind.bind("q1", "", {})
    kind.bind("q2", "ignored", {})
    kind.bind("q1", "another key", {})
    assert kind.route(msg("anything")) == ("q1", "q2")
    kind.unbind("q1", "", {})
    assert kind.route(msg("")) == ("q1", "q2")
    kind.unbind("q1", "another key", {})
    assert kind.route(msg("")) == ("q2",)
    kind.unbind("q1", "", {})  # unknown: ignored
    assert kind.route(msg("")) == ("q2",)


def test_topic_type_keeps_bindings_with_different_arguments_apart() -> None:
    kind = TopicExchangeType()
    kind.bind("q", "a.*", {})
    kind.bind("q", "a.*", {"x": 1})
    kind.unbind("q", "a.*", {})
    assert kind.route(msg("a.b")) == ("q",)
    kind.unbind("q", "a.*", {"x": 1})
    assert kind.route(msg("a.b")) == ()


def test_topic_type_accepts_any_binding_key() -> None:
    kind = TopicExchangeType()
    for key in ["", "#", "*", "a..b", "##", "a*.b", "#a", "ü.ñ"]:
        kind.bind("q", key, {})
    assert kind.route(msg("##")) == ("q",)  # via "#", "*" and the literal word "##", once


def test_default_exchange_refuses_bindings() -> None:
    kind = DefaultExchangeType(lambda name: None)
    for call in (kind.bind, kind.unbind):
        with pytest.raises(ChannelError) as raised:
            call("q", "k", {})
        assert raised.value.code == ReplyCode.ACCESS_REFUSED
        assert raised.value.text == "operation not permitted on the default exchange"


@pytest.mark.parametrize("cls", [DirectExchangeType, FanoutExchangeType, TopicExchangeType])
def test_types_satisfy_the_protocol(cls: type[ExchangeType]) -> None:
    kind: ExchangeType = cls()
    kind.bind("q", "k", {})
    assert list(kind.route(msg("k"))) == ["q"]


def test_topic_type_returns_each_destination_once_and_caches_per_key() -> None:
    kind = TopicExchangeType()
    kind.bind("Q2", "*.*.rabbit", {})
    kind.bind("Q2", "lazy.#", {})
    first = kind.route(msg("lazy.pink.rabbit"))
    assert first == ("Q2",)
    assert kind.route(msg("lazy.pink.rabbit")) is first  # served from the cache


def test_topic_cache_is_dropped_on_bind_and_unbind() -> None:
    kind = TopicExchangeType()
    kind.bind("q1", "a.*", {})
    assert kind.route(msg("a.b")) == ("q1",)
    kind.bind("q2", "#", {})
    assert kind.route(msg("a.b")) == ("q1", "q2")
    kind.unbind("q1", "a.*", {})
    assert kind.route(msg("a.b")) == ("q2",)


def test_topic_cache_stays_bounded() -> None:
    kind = TopicExchangeType()
    kind.bind("q", "#", {})
    for i in range(ROUTE_CACHE_SIZE + 100):
        assert kind.route(msg(f"k{i}")) == ("q",)
    assert len(kind._cache) == ROUTE_CACHE_SIZE
    assert kind.route(msg("k0")) == ("q",)


@pytest.mark.parametrize("cls", [*EXCHANGE_TYPES.values(), DefaultExchangeType])
def test_every_type_declares_whether_its_routes_are_unique(cls: type[ExchangeType]) -> None:
    assert isinstance(cls.unique_destinations, bool)
