"""Channel class: open/close, flow, methods on channels that are not open, content-frame sequencing errors."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pytest
from pamqp import commands, header
from pamqp.body import ContentBody

from .conftest import ConnectFactory, RawFactory
from .helpers import new_queue, pump


def test_open_and_close_channels(connection: pika.BlockingConnection) -> None:
    channels = [connection.channel() for _ in range(5)]
    assert len({ch.channel_number for ch in channels}) == 5
    assert all(ch.is_open for ch in channels)
    channels[2].close()
    assert channels[2].is_closed
    assert connection.is_open
    # The others still work.
    queue = channels[3].queue_declare("", exclusive=True).method.queue
    channels[4].queue_declare(queue, passive=True)


def test_channel_number_can_be_reused_after_close(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0), 1)
    client.expect(commands.Channel.CloseOk, channel=1)
    client.open_channel(1)
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    ok = client.expect(commands.Queue.DeclareOk, channel=1)
    assert ok.queue.startswith("amq.gen-")


def test_channel_reopens_after_a_channel_error(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Queue.Declare(queue="no-such-queue-anywhere", passive=True), 1)
    close = client.expect(commands.Channel.Close, channel=1)
    assert close.reply_code == 404
    assert (close.class_id, close.method_id) == (50, 10)
    client.send(commands.Channel.CloseOk(), 1)
    client.open_channel(1)


def test_channel_flow_active_false_is_540_on_the_connection(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as excinfo:
        ch.flow(False)
    assert (excinfo.value.reply_code, excinfo.value.reply_text) == (540, "NOT_IMPLEMENTED - active=false")
    assert connection.is_closed


def test_channel_flow_active_false_close_frame(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Channel.Flow(active=False), 1)
    close = client.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (540, "NOT_IMPLEMENTED - active=false")
    assert (close.class_id, close.method_id) == (20, 20)


def test_channel_flow_active_true_is_acknowledged(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Channel.Flow(active=True), 1)
    ok = client.expect(commands.Channel.FlowOk, channel=1)
    assert ok.active is True


def test_second_channel_open_is_504(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Channel.Open(), 1)
    close = client.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (504, "CHANNEL_ERROR - second 'channel.open' seen")
    assert (close.class_id, close.method_id) == (20, 10)


def test_method_on_unopened_channel_is_504(raw: RawFactory) -> None:
    client = raw()
    client.handshake()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 7)
    close = client.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (504, "CHANNEL_ERROR - expected 'channel.open'")
    assert (close.class_id, close.method_id) == (50, 10)


def test_method_on_closed_channel_is_504(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0), 1)
    client.expect(commands.Channel.CloseOk, channel=1)
    client.send(commands.Basic.Qos(prefetch_count=1), 1)
    close = client.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (504, "CHANNEL_ERROR - expected 'channel.open'")
    assert (close.class_id, close.method_id) == (60, 10)


def test_pika_refuses_to_use_a_closed_channel(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.close()
    with pytest.raises(pika.exceptions.ChannelWrongStateError):
        ch.queue_declare("", exclusive=True)
    assert connection.is_open


def test_content_header_without_publish_is_505(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(header.ContentHeader(0, 1, commands.Basic.Properties()), 1)
    close = client.expect_connection_close()
    assert close.reply_code == 505
    assert close.reply_text == "UNEXPECTED_FRAME - expected method frame, got non method frame instead"


def test_content_body_without_publish_is_505(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(ContentBody(b"orphan"), 1)
    close = client.expect_connection_close()
    assert close.reply_code == 505
    assert close.reply_text == "UNEXPECTED_FRAME - expected method frame, got non method frame instead"


def test_method_where_content_header_is_expected_is_505(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Basic.Publish(exchange="", routing_key="anything"), 1)
    client.send(commands.Basic.Qos(prefetch_count=1), 1)
    close = client.expect_connection_close()
    assert close.reply_code == 505
    assert close.reply_text == (
        "UNEXPECTED_FRAME - expected content header for class 60, got non content header frame instead"
    )
    assert (close.class_id, close.method_id) == (60, 40)


def test_channel_error_leaves_sibling_channels_working(connection: pika.BlockingConnection) -> None:
    good = connection.channel()
    queue = new_queue(good)
    bad = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker):
        bad.queue_declare("definitely-missing-queue", passive=True)
    good.basic_publish("", queue, b"ok")
    method, _props, body = good.basic_get(queue, auto_ack=True)
    assert method is not None
    assert body == b"ok"


def test_channel_close_with_unacked_consumer_deliveries_requeues(
    connect: ConnectFactory, unique: str
) -> None:
    connection = connect()
    ch = connection.channel()
    queue = ch.queue_declare(f"{unique}-q", exclusive=True).method.queue
    for i in range(3):
        ch.basic_publish("", queue, f"m{i}".encode())
    consumer_ch = connection.channel()
    got: list[Any] = []
    consumer_ch.basic_consume(queue, lambda _c, m, _p, b: got.append((m.redelivered, b)))
    pump(connection, lambda: len(got) == 3, what="3 deliveries")
    consumer_ch.close()
    bodies = []
    for _ in range(3):
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        assert method is not None
        assert method.redelivered is True
        bodies.append(body)
    assert bodies == [b"m0", b"m1", b"m2"]
    assert got == [(False, b"m0"), (False, b"m1"), (False, b"m2")]
