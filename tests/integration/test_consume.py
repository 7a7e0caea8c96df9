"""basic.qos, basic.consume and basic.cancel: prefetch accounting, consumer tags, exclusivity, round robin,
client- and server-initiated cancellation."""

from __future__ import annotations

from functools import partial
from typing import Any

import pika
import pika.exceptions
import pytest
from pamqp import commands

from .conftest import ConnectFactory, Janitor, RawFactory
from .helpers import Collector, fill, new_queue, prepared, pump, pump_for, ready

SETTLE_S = 0.3  # how long we watch for deliveries that must NOT arrive


def consume_two_filled_queues(
    connection: pika.BlockingConnection, *qos: dict[str, Any], expected: int
) -> tuple[Any, list[str], Collector]:
    """A confirm-mode channel that applies the basic.qos calls ``qos``, then consumes (manual ack) two queues
    of ten messages each; returns once ``expected`` deliveries arrived and SETTLE_S passed without more."""
    ch, queue = prepared(connection, 10)
    queues = [queue, new_queue(ch)]
    fill(ch, queues[1], 10)
    for limits in qos:
        ch.basic_qos(**limits)
    seen = Collector()
    for queue in queues:
        ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == expected, what=f"{expected} deliveries on the channel")
    pump_for(connection, SETTLE_S)
    return ch, queues, seen


def has_count(seen: Collector, count: int) -> bool:
    return len(seen) == count


def test_per_consumer_prefetch_limits_each_consumer(connection: pika.BlockingConnection) -> None:
    # global=false: applies to each consumer started afterwards
    ch, queues, seen = consume_two_filled_queues(connection, {"prefetch_count": 2}, expected=4)
    assert len(seen) == 4
    assert sorted(d.consumer_tag for d in seen.deliveries).count(seen.deliveries[0].consumer_tag) == 2
    assert [ready(ch, q) for q in queues] == [8, 8]


def test_global_prefetch_is_shared_by_the_channel(connection: pika.BlockingConnection) -> None:
    ch, queues, seen = consume_two_filled_queues(
        connection, {"prefetch_count": 3, "global_qos": True}, expected=3
    )
    assert len(seen) == 3
    assert sum(ready(ch, q) for q in queues) == 17


def test_per_consumer_and_global_prefetch_both_apply(connection: pika.BlockingConnection) -> None:
    _ch, _queues, seen = consume_two_filled_queues(
        connection, {"prefetch_count": 2}, {"prefetch_count": 3, "global_qos": True}, expected=3
    )
    assert len(seen) == 3
    tags = [d.consumer_tag for d in seen.deliveries]
    assert max(tags.count(t) for t in set(tags)) <= 2


def test_acking_opens_the_prefetch_window(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 5)
    ch.basic_qos(prefetch_count=2)
    seen = Collector()
    ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 2, what="2 deliveries")
    pump_for(connection, SETTLE_S)
    assert seen.bodies == [b"m0", b"m1"]
    ch.basic_ack(seen.deliveries[0].delivery_tag)
    pump(connection, lambda: len(seen) == 3, what="a third delivery after one ack")
    ch.basic_ack(seen.deliveries[2].delivery_tag, multiple=True)
    pump(connection, lambda: len(seen) == 5, what="the rest after a multiple ack")
    assert seen.bodies == [b"m0", b"m1", b"m2", b"m3", b"m4"]


def test_prefetch_applies_to_consumers_started_after_qos_only(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    early_q = new_queue(ch)
    late_q = new_queue(ch)
    fill(ch, early_q, 5)
    fill(ch, late_q, 5)
    early = Collector()
    ch.basic_consume(early_q, early)  # unlimited
    ch.basic_qos(prefetch_count=1)
    late = Collector()
    ch.basic_consume(late_q, late)
    pump(connection, lambda: len(early) == 5 and len(late) == 1, what="5 early and 1 late delivery")
    pump_for(connection, SETTLE_S)
    assert len(late) == 1


def test_auto_ack_consumers_ignore_prefetch(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 10)
    ch.basic_qos(prefetch_count=1)
    seen = Collector()
    ch.basic_consume(queue, seen, auto_ack=True)
    pump(connection, lambda: len(seen) == 10, what="all 10 deliveries")


def test_prefetch_size_is_540_not_implemented(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as excinfo:
        ch.basic_qos(prefetch_size=10)
    assert (excinfo.value.reply_code, excinfo.value.reply_text) == (
        540,
        "NOT_IMPLEMENTED - prefetch_size!=0 (10)",
    )
    assert connection.is_closed


def test_consume_with_empty_tag_gets_a_server_generated_tag(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    client.send(commands.Basic.Consume(queue=queue, consumer_tag=""), 1)
    tag = client.expect(commands.Basic.ConsumeOk, channel=1).consumer_tag
    assert tag.startswith("amq.ctag-")
    client.send(commands.Basic.Consume(queue=queue, consumer_tag=""), 1)
    assert client.expect(commands.Basic.ConsumeOk, channel=1).consumer_tag != tag


def test_consume_ok_echoes_a_client_tag(channel: Any, unique: str) -> None:
    queue = new_queue(channel)
    assert channel.basic_consume(queue, Collector(), consumer_tag=f"{unique}-tag") == f"{unique}-tag"


def test_reusing_a_consumer_tag_on_a_channel_is_530(raw: RawFactory, unique: str) -> None:
    client = raw().opened()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    tag = f"{unique}-dup"
    client.send(commands.Basic.Consume(queue=queue, consumer_tag=tag), 1)
    client.expect(commands.Basic.ConsumeOk, channel=1)
    client.send(commands.Basic.Consume(queue=queue, consumer_tag=tag), 1)
    close = client.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (
        530,
        f"NOT_ALLOWED - attempt to reuse consumer tag '{tag}'",
    )
    assert (close.class_id, close.method_id) == (60, 20)


def test_the_same_consumer_tag_on_two_channels_is_fine(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch1 = connection.channel()
    queue = new_queue(ch1)
    ch2 = connection.channel()
    ch1.basic_consume(queue, Collector(), consumer_tag=f"{unique}-same")
    ch2.basic_consume(queue, Collector(), consumer_tag=f"{unique}-same")
    assert ch1.queue_declare(queue, passive=True).method.consumer_count == 2


def test_exclusive_consumer_blocks_other_consumers(connection: pika.BlockingConnection) -> None:
    ch1 = connection.channel()
    queue = new_queue(ch1)
    ch1.basic_consume(queue, Collector(), exclusive=True)
    ch2 = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch2.basic_consume(queue, Collector())
    assert excinfo.value.args == (403, f"ACCESS_REFUSED - queue '{queue}' in vhost '/' in exclusive use")


def test_exclusive_consume_on_a_queue_with_consumers_is_403(connection: pika.BlockingConnection) -> None:
    ch1 = connection.channel()
    queue = new_queue(ch1)
    ch1.basic_consume(queue, Collector())
    ch2 = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch2.basic_consume(queue, Collector(), exclusive=True)
    assert excinfo.value.args == (403, f"ACCESS_REFUSED - queue '{queue}' in vhost '/' in exclusive use")


def test_consume_from_missing_queue_is_404(channel: Any, unique: str) -> None:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        channel.basic_consume(f"{unique}-missing", Collector())
    assert excinfo.value.args == (404, f"NOT_FOUND - no queue '{unique}-missing' in vhost '/'")


def test_round_robin_across_consumers(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    queue = new_queue(ch)
    seen = Collector()
    tags = [ch.basic_consume(queue, seen, auto_ack=True) for _ in range(3)]
    fill(ch, queue, 9)
    pump(connection, lambda: len(seen) == 9, what="9 deliveries")
    assert seen.bodies == [f"m{i}".encode() for i in range(9)]
    order = [d.consumer_tag for d in seen.deliveries]
    assert sorted(set(order)) == sorted(tags)
    assert all(order.count(tag) == 3 for tag in tags)
    # strict rotation: every consumer gets every third message
    assert order[3:] == order[:-3]


def test_round_robin_across_connections(connect: ConnectFactory, janitor: Janitor, unique: str) -> None:
    publisher = connect()
    pub_ch = publisher.channel()
    pub_ch.confirm_delivery()
    queue = janitor.declare_queue(pub_ch, f"{unique}-shared")
    consumers = [connect() for _ in range(2)]
    collectors = [Collector(), Collector()]
    for conn, seen in zip(consumers, collectors, strict=True):
        conn.channel().basic_consume(queue, seen, auto_ack=True)
    fill(pub_ch, queue, 10)
    for conn, seen in zip(consumers, collectors, strict=True):
        pump(conn, partial(has_count, seen, 5), what="5 deliveries to each consumer")
    assert sorted(collectors[0].bodies + collectors[1].bodies) == sorted(f"m{i}".encode() for i in range(10))


def test_client_cancel_stops_deliveries(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    queue = new_queue(ch)
    seen = Collector()
    tag = ch.basic_consume(queue, seen, auto_ack=True)
    fill(ch, queue, 2, "a")
    pump(connection, lambda: len(seen) == 2, what="2 deliveries")
    ch.basic_cancel(tag)
    fill(ch, queue, 2, "b")
    pump_for(connection, SETTLE_S)
    assert seen.bodies == [b"a0", b"a1"]
    assert ready(ch, queue) == 2


def test_cancel_keeps_unacked_deliveries_unacked_until_acked(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 2)
    seen = Collector()
    tag = ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 2, what="2 deliveries")
    ch.basic_cancel(tag)
    assert ready(ch, queue) == 0  # still unacked, not requeued by the cancel
    ch.basic_ack(seen.deliveries[1].delivery_tag, multiple=True)  # acks after cancel are valid
    assert ch.is_open
    assert ready(ch, queue) == 0


def test_cancel_of_unknown_tag_is_ok(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Basic.Cancel(consumer_tag="never-used"), 1)
    ok = client.expect(commands.Basic.CancelOk, channel=1)
    assert ok.consumer_tag == "never-used"


def test_server_cancels_consumers_when_their_queue_is_deleted(connect: ConnectFactory) -> None:
    consumer_conn = connect()
    ch = consumer_conn.channel()
    queue = new_queue(ch)
    cancelled: list[Any] = []
    ch.add_on_cancel_callback(cancelled.append)
    tag = ch.basic_consume(queue, Collector())
    consumer_conn.channel().queue_delete(queue)
    pump(consumer_conn, lambda: len(cancelled) == 1, what="server-sent basic.cancel")
    frame = cancelled[0]
    assert isinstance(frame.method, pika.spec.Basic.Cancel)
    assert frame.method.consumer_tag == tag
    assert ch.is_open
    assert tag not in ch.consumer_tags


def test_server_sent_cancel_on_raw_socket(raw: RawFactory) -> None:
    client = raw().opened()
    client.open_channel(2)
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    client.send(commands.Basic.Consume(queue=queue, consumer_tag="c1"), 1)
    client.expect(commands.Basic.ConsumeOk, channel=1)
    client.send(commands.Queue.Delete(queue=queue), 2)
    got: dict[type[Any], tuple[int, Any]] = {}
    for _ in range(2):
        channel_number, value = client.recv_method()
        got[type(value)] = (channel_number, value)
    assert got[commands.Basic.Cancel][0] == 1
    assert got[commands.Basic.Cancel][1].consumer_tag == "c1"
    assert got[commands.Queue.DeleteOk][0] == 2
