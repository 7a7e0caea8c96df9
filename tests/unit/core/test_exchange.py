"""Exchange entity and factory: declare-time checks and their RabbitMQ texts (observed on RabbitMQ 3.10.8)."""

from __future__ import annotations

from typing import Any

import pytest

from broker.core.exchanges.default import DefaultExchangeType
from broker.core.exchanges.direct import DirectExchangeType
from broker.core.exchanges.exchange import (
    Exchange,
    check_alternate_exchange_argument,
    check_exchange_type,
    create_exchange,
    is_reserved_name,
    reserved_name_error,
    system_exchange_deletion_error,
)
from broker.core.exchanges.registry import EXCHANGE_TYPES
from broker.core.model.message import Message
from protocol.errors import ChannelError, ReplyCode


def test_create_exchange_builds_fresh_routing_state_of_the_named_type() -> None:
    arguments = {"x-delayed-type": "direct"}  # required by x-delayed-message, ignored by the others
    for type_name, cls in EXCHANGE_TYPES.items():
        first = create_exchange("x1", type_name, arguments=arguments)
        second = create_exchange("x2", type_name, arguments=arguments)
        assert isinstance(first.kind, cls)
        assert first.kind is not second.kind
        assert first.type_name == type_name


def test_create_exchange_keeps_the_declared_properties() -> None:
    exchange = create_exchange("x", "topic", True, True, True, {"alternate-exchange": "ae", "foo": 1})
    assert (exchange.name, exchange.durable, exchange.auto_delete, exchange.internal) == (
        "x",
        True,
        True,
        True,
    )
    assert exchange.arguments == {"alternate-exchange": "ae", "foo": 1}
    assert exchange.alternate_exchange == "ae"
    assert not exchange.is_default


def test_unknown_type_is_406_unknown_exchange_type() -> None:
    # 3.13+/4.x (rabbitmq-server PR #11214); 3.10.8 closed the connection with 503 and the same text.
    with pytest.raises(ChannelError) as raised:
        create_exchange("x", "x-nonexistent-type")
    assert raised.value.code == ReplyCode.PRECONDITION_FAILED
    assert raised.value.text == "unknown exchange type 'x-nonexistent-type'"
    with pytest.raises(ChannelError):
        check_exchange_type("foo")
    assert check_exchange_type("direct") is DirectExchangeType


def test_default_exchange_routes_by_queue_name() -> None:
    queues = {"q1": "Q1"}
    default = create_exchange("", "direct", lookup_queue=queues.get)
    assert default.is_default
    assert isinstance(default.kind, DefaultExchangeType)
    assert default.kind.route(Message("", "q1", b"", b"")) == ("Q1",)
    assert default.kind.route(Message("", "missing", b"", b"")) == ()
    assert default.alternate_exchange is None


def test_default_exchange_without_lookup_routes_nothing() -> None:
    default = create_exchange("", "direct", durable=True)
    assert default.kind.route(Message("", "q1", b"", b"")) == ()


def test_exchanges_hash_by_identity() -> None:
    a, b = create_exchange("x", "direct"), create_exchange("x", "direct")
    assert a != b
    assert len({a, b, a}) == 2


def inequivalent(exchange: Exchange, **overrides: Any) -> str:
    requested: dict[str, Any] = {
        "type_name": exchange.type_name,
        "durable": exchange.durable,
        "auto_delete": exchange.auto_delete,
        "internal": exchange.internal,
        "arguments": dict(exchange.arguments),
    }
    requested.update(overrides)
    with pytest.raises(ChannelError) as raised:
        exchange.check_equivalent(vhost="/", **requested)
    assert raised.value.code == ReplyCode.PRECONDITION_FAILED
    return raised.value.text


def test_redeclare_with_the_same_properties_is_accepted() -> None:
    exchange = create_exchange("pt.x2", "direct", arguments={"alternate-exchange": "pt.ae", "foo": 1})
    exchange.check_equivalent("direct", False, False, False, {"alternate-exchange": "pt.ae", "foo": 1}, "/")


def test_only_the_alternate_exchange_argument_is_compared() -> None:
    exchange = create_exchange("pt.x2", "direct", arguments={"alternate-exchange": "pt.ae", "foo": 1})
    exchange.check_equivalent("direct", False, False, False, {"alternate-exchange": "pt.ae", "foo": 2}, "/")
    exchange.check_equivalent("direct", False, False, False, {"alternate-exchange": b"pt.ae"}, "/")


@pytest.mark.parametrize(
    ("overrides", "text"),
    [
        ({"type_name": "fanout"}, "received 'fanout' but current is 'direct'"),
        ({"durable": True}, "received 'true' but current is 'false'"),
        ({"auto_delete": True}, "received 'true' but current is 'false'"),
        ({"internal": True}, "received 'true' but current is 'false'"),
    ],
)
def test_redeclare_with_other_flags_is_406_with_the_field_name(overrides: dict[str, Any], text: str) -> None:
    exchange = create_exchange("pt.x1", "direct")
    field = next(iter(overrides)).replace("type_name", "type")
    expected = f"inequivalent arg '{field}' for exchange 'pt.x1' in vhost '/': {text}"
    assert inequivalent(exchange, **overrides) == expected


def test_the_first_difference_in_rabbitmq_order_is_reported() -> None:
    exchange = create_exchange("pt.x1", "direct")
    text = inequivalent(exchange, type_name="fanout", durable=True, arguments={"alternate-exchange": "b"})
    assert text.startswith("inequivalent arg 'type' ")


@pytest.mark.parametrize(
    ("current", "received", "text"),
    [
        (None, "b", "received the value 'b' of type 'longstr' but current is none"),
        ("pt.ae", None, "received none but current is the value 'pt.ae' of type 'longstr'"),
        ("pt.ae", "zz", "received 'zz' but current is 'pt.ae'"),
        ("pt.ae", 5, "received '5' but current is 'pt.ae'"),
    ],
)
def test_alternate_exchange_difference_texts(current: str | None, received: Any, text: str) -> None:
    current_args = {} if current is None else {"alternate-exchange": current}
    received_args = {} if received is None else {"alternate-exchange": received}
    exchange = create_exchange("pt.x2", "direct", arguments=current_args)
    assert inequivalent(exchange, arguments=received_args) == (
        f"inequivalent arg 'alternate-exchange' for exchange 'pt.x2' in vhost '/': {text}"
    )


def test_vhost_name_appears_in_the_text() -> None:
    exchange = create_exchange("x", "direct")
    with pytest.raises(ChannelError) as raised:
        exchange.check_equivalent("topic", False, False, False, None, "tenant-a")
    assert raised.value.text == (
        "inequivalent arg 'type' for exchange 'x' in vhost 'tenant-a': "
        "received 'topic' but current is 'direct'"
    )


@pytest.mark.parametrize(
    ("value", "type_name"), [(5, "signedint"), (True, "bool"), (bytearray(b"ae"), "binary")]
)
def test_a_non_string_alternate_exchange_argument_is_refused(value: Any, type_name: str) -> None:
    with pytest.raises(ChannelError) as raised:
        create_exchange("pt.aeint", "direct", arguments={"alternate-exchange": value})
    assert raised.value.code == ReplyCode.PRECONDITION_FAILED
    assert raised.value.text == (
        f"invalid type '{type_name}' for arg 'alternate-exchange' in exchange 'pt.aeint' in vhost '/'"
    )
    with pytest.raises(ChannelError):
        check_alternate_exchange_argument("pt.aeint", {"alternate-exchange": value}, "v")


def test_alternate_exchange_comes_from_the_argument_before_the_policy() -> None:
    with_arg = create_exchange("x", "direct", arguments={"alternate-exchange": "from-arg"})
    with_arg.set_policy_alternate_exchange("from-policy")
    assert with_arg.alternate_exchange == "from-arg"
    without = create_exchange("y", "direct")
    assert without.alternate_exchange is None
    without.set_policy_alternate_exchange("from-policy")
    assert without.alternate_exchange == "from-policy"
    without.set_policy_alternate_exchange(None)
    assert without.alternate_exchange is None


def test_reserved_names_and_their_texts() -> None:
    assert is_reserved_name("amq.foo")
    assert not is_reserved_name("amqfoo")
    assert not is_reserved_name("x.amq.")
    error = reserved_name_error("exchange", "amq.foo")
    assert (error.code, error.text) == (
        ReplyCode.ACCESS_REFUSED,
        "exchange name 'amq.foo' contains reserved prefix 'amq.*'",
    )
    error = system_exchange_deletion_error("amq.direct", "/")
    assert (error.code, error.text) == (
        ReplyCode.ACCESS_REFUSED,
        "deletion of system exchange 'amq.direct' in vhost '/' not allowed",
    )
