"""basic.publish, basic.return, basic.get: mandatory, immediate, properties and bodies round-tripping,
get-ok counts."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pika
import pika.exceptions
import pytest
from pamqp import commands

from .conftest import RawFactory
from .helpers import new_queue, pump


def test_mandatory_unroutable_message_is_returned_with_312(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch = connection.channel()
    returned: list[tuple[Any, Any, bytes]] = []
    ch.add_on_return_callback(lambda _ch, method, props, body: returned.append((method, props, body)))
    props = pika.BasicProperties(content_type="text/plain", headers={"k": "v"}, message_id="id-1")
    ch.basic_publish("amq.direct", f"{unique}-nobody", b"lost", properties=props, mandatory=True)
    pump(connection, lambda: len(returned) == 1, what="basic.return")
    method, got_props, body = returned[0]
    assert (method.reply_code, method.reply_text) == (312, "NO_ROUTE")
    assert (method.exchange, method.routing_key) == ("amq.direct", f"{unique}-nobody")
    assert body == b"lost"
    assert (got_props.content_type, got_props.headers, got_props.message_id) == (
        "text/plain",
        {"k": "v"},
        "id-1",
    )


def test_mandatory_to_default_exchange_without_queue_is_returned(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch = connection.channel()
    returned: list[Any] = []
    ch.add_on_return_callback(lambda _ch, method, _props, _body: returned.append(method))
    ch.basic_publish("", f"{unique}-no-such-queue", b"x", mandatory=True)
    pump(connection, lambda: len(returned) == 1, what="basic.return")
    assert (returned[0].reply_code, returned[0].reply_text, returned[0].exchange) == (312, "NO_ROUTE", "")


def test_routable_mandatory_message_is_not_returned(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    returned: list[Any] = []
    ch.add_on_return_callback(lambda *args: returned.append(args))
    queue = new_queue(ch)
    ch.basic_publish("", queue, b"x", mandatory=True)
    connection.process_data_events(time_limit=0)
    assert returned == []


def test_non_mandatory_unroutable_message_is_dropped_and_confirmed(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    ch.basic_publish("amq.direct", f"{unique}-nobody", b"dropped")  # no exception: acked, not nacked
    assert ch.is_open


def test_pika_confirm_mode_raises_unroutable_for_returned_message(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    with pytest.raises(pika.exceptions.UnroutableError) as excinfo:
        ch.basic_publish("amq.direct", f"{unique}-nobody", b"lost", mandatory=True)
    [message] = excinfo.value.messages
    assert message.method.reply_code == 312
    assert message.body == b"lost"


def test_return_arrives_before_the_confirm_ack(raw: RawFactory, unique: str) -> None:
    client = raw().opened()
    client.send(commands.Confirm.Select(), 1)
    client.expect(commands.Confirm.SelectOk, channel=1)
    client.publish(1, "amq.direct", f"{unique}-nobody", b"lost", mandatory=True)
    ret = client.expect(commands.Basic.Return, channel=1)
    assert (ret.reply_code, ret.reply_text, ret.exchange, ret.routing_key) == (
        312,
        "NO_ROUTE",
        "amq.direct",
        f"{unique}-nobody",
    )
    content_header = client.recv_method()[1]
    assert content_header.body_size == 4
    assert client.recv_method()[1].value == b"lost"
    ack = client.expect(commands.Basic.Ack, channel=1)
    assert (ack.delivery_tag, ack.multiple) == (1, False)


def test_immediate_publish_is_540_not_implemented(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    client.publish(1, "", queue, b"now or never", immediate=True)
    close = client.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (540, "NOT_IMPLEMENTED - immediate=true")
    assert (close.class_id, close.method_id) == (60, 40)


def test_all_basic_properties_round_trip(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    queue = new_queue(ch)
    headers: dict[str, Any] = {
        "str": "text",
        "int": 42,
        "negative": -7,
        "big": 2**40,
        "bool": True,
        "decimal": Decimal("3.14"),
        "none": None,
        "list": [1, "two", False],
        "nested": {"a": {"b": "c"}},
        "bytes": b"\x00\x01binary",
        "when": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    }
    props = pika.BasicProperties(
        content_type="application/json",
        content_encoding="utf-8",
        headers=headers,
        delivery_mode=2,
        priority=5,
        correlation_id="corr-1",
        reply_to="reply-queue",
        expiration="60000",
        message_id="msg-1",
        timestamp=1_700_000_000,
        type="event.type",
        user_id="guest",
        app_id="tests",
        cluster_id="cluster-x",
    )
    ch.basic_publish("", queue, b"{}", properties=props)
    method, got, body = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert body == b"{}"
    for field in (
        "content_type",
        "content_encoding",
        "delivery_mode",
        "priority",
        "correlation_id",
        "reply_to",
        "expiration",
        "message_id",
        "timestamp",
        "type",
        "user_id",
        "app_id",
        "cluster_id",
    ):
        assert getattr(got, field) == getattr(props, field), field
    assert got.headers == headers


def test_message_without_properties_has_none_properties(channel: Any) -> None:
    queue = new_queue(channel)
    channel.basic_publish("", queue, b"bare")
    method, props, body = channel.basic_get(queue, auto_ack=True)
    assert method is not None
    assert body == b"bare"
    assert (props.content_type, props.headers, props.delivery_mode, props.message_id) == (
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize("size", [0, 1, 131_072 - 8, 131_072 - 7, 131_072 * 3 + 17, 1_000_000])
def test_body_sizes_round_trip(connection: pika.BlockingConnection, size: int) -> None:
    ch = connection.channel()
    queue = new_queue(ch)
    body = bytes((i * 31) % 251 for i in range(size))
    ch.basic_publish("", queue, body)
    method, _props, got = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert got == body


def test_get_ok_fields_and_message_count(channel: Any) -> None:
    channel.confirm_delivery()
    queue = new_queue(channel)
    for i in range(3):
        channel.basic_publish("", queue, f"m{i}".encode())
    counts = []
    for i in range(3):
        method, _props, body = channel.basic_get(queue)
        assert method is not None
        assert body == f"m{i}".encode()
        assert (method.delivery_tag, method.redelivered, method.exchange, method.routing_key) == (
            i + 1,
            False,
            "",
            queue,
        )
        counts.append(method.message_count)
    assert counts == [2, 1, 0]
    method, props, body = channel.basic_get(queue)
    assert (method, props, body) == (None, None, None)


def test_get_empty_on_raw_socket(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    client.send(commands.Basic.Get(queue=queue), 1)
    empty = client.expect(commands.Basic.GetEmpty, channel=1)
    assert empty.cluster_id == ""


def test_get_from_missing_queue_is_404(channel: Any, unique: str) -> None:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        channel.basic_get(f"{unique}-missing")
    assert excinfo.value.args == (404, f"NOT_FOUND - no queue '{unique}-missing' in vhost '/'")


def test_delivery_keeps_exchange_and_routing_key_of_the_publish(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch = connection.channel()
    queue = new_queue(ch)
    ch.queue_bind(queue, "amq.topic", routing_key=f"{unique}.#")
    ch.basic_publish("amq.topic", f"{unique}.a.b", b"x")
    method, _props, _body = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert (method.exchange, method.routing_key) == ("amq.topic", f"{unique}.a.b")


@pytest.mark.parametrize(
    ("expiration", "text"),
    [
        ("abc", "PRECONDITION_FAILED - invalid expiration 'abc': no_integer"),
        ("-1", "PRECONDITION_FAILED - invalid expiration '-1': {value_negative,-1}"),
    ],
)
def test_invalid_expiration_is_406(connection: pika.BlockingConnection, expiration: str, text: str) -> None:
    ch = connection.channel()
    queue = new_queue(ch)
    ch.confirm_delivery()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch.basic_publish("", queue, b"x", properties=pika.BasicProperties(expiration=expiration))
    assert excinfo.value.args == (406, text)


def test_user_id_must_match_the_authenticated_user(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    queue = new_queue(ch)
    ch.confirm_delivery()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch.basic_publish("", queue, b"x", properties=pika.BasicProperties(user_id="mallory"))
    assert excinfo.value.args == (
        406,
        "PRECONDITION_FAILED - user_id property set to 'mallory' but authenticated user was 'guest'",
    )


def test_publish_order_is_preserved_per_queue(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    queue = new_queue(ch)
    for i in range(200):
        ch.basic_publish("", queue, str(i).encode())
    bodies = []
    while True:
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            break
        bodies.append(int(body))
    assert bodies == list(range(200))
