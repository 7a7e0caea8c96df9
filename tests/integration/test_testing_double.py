"""broker.testing against real clients: embedding, vhost lifecycle, inspection, waits, settle and faults."""

from __future__ import annotations

import socket
import threading

import aio_pika
import pika
import pytest
from pamqp import commands, frame, header
from pamqp.body import ContentBody

from broker.testing import BrokerThread, EmbeddedBroker, VhostHandle, WaitTimeout
from tests.integration.raw_amqp import RawAMQP


@pytest.fixture
def vhost(warrenmq_vhost: VhostHandle) -> VhostHandle:
    return warrenmq_vhost


def _raw(vhost: VhostHandle) -> RawAMQP:
    client = RawAMQP(vhost.thread.host, vhost.thread.port)
    # As pika and asyncio do: without it Nagle keeps small frames in the client's kernel, unsent.
    client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.handshake(vhost=vhost.name)
    client.open_channel(1)
    return client


def _publish_burst(count: int, queue: str) -> bytes:
    parts = []
    for _ in range(count):
        parts.append(frame.marshal(commands.Basic.Publish(exchange="", routing_key=queue), 1))
        parts.append(frame.marshal(header.ContentHeader(0, 3, commands.Basic.Properties()), 1))
        parts.append(frame.marshal(ContentBody(b"abc"), 1))
    return b"".join(parts)


def test_settle_waits_for_every_frame_sent_so_far_and_the_dispatch_it_causes(vhost: VhostHandle) -> None:
    with _raw(vhost) as client:
        client.send(commands.Queue.Declare(queue="burst"), 1)
        client.expect(commands.Queue.DeclareOk)
        # One sendall: publishes, then a consumer. Delivering them takes the dispatcher many loop turns
        # (bounded batches), and part of the input is still in socket buffers when sendall returns.
        consume = frame.marshal(commands.Basic.Consume(queue="burst", no_ack=True), 1)
        client.send_bytes(_publish_burst(20_000, "burst") + consume)
        # What is tested is that settle waits for all of it, not how fast: 20,000 publishes traced by
        # coverage on two loaded cores took longer than the default 5 s once (make test-repeat).
        vhost.settle(timeout=120)
        assert vhost.queue("burst").messages_ready == 0
        assert len(vhost.history(queue="burst")) == 20_000


async def test_embedded_broker_runs_in_the_current_loop() -> None:
    async with EmbeddedBroker(name_seed=3) as embedded:
        assert embedded.url == f"amqp://guest:guest@127.0.0.1:{embedded.port}/"
        connection = await aio_pika.connect(embedded.url)
        channel = await connection.channel()
        queue = await channel.declare_queue("", exclusive=True)
        await channel.default_exchange.publish(aio_pika.Message(b"hi"), routing_key=queue.name)
        await embedded.inspector.settle()
        assert embedded.inspector.queue(queue.name).messages_ready == 1
        assert queue.name in embedded.broker.vhosts["/"].queues
    await connection.close()


def test_broker_thread_marshals_calls_onto_its_loop() -> None:
    with BrokerThread() as broker:
        ident = broker.call(threading.get_ident)
        assert ident != threading.get_ident()
        assert broker.call(lambda: sorted(broker.broker.vhosts)) == ["/"]
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        assert connection.is_open
        connection.close()


def test_deleting_a_vhost_closes_its_connections_with_320(warrenmq_broker: BrokerThread) -> None:
    handle = warrenmq_broker.vhost("doomed")
    connection = pika.BlockingConnection(pika.URLParameters(handle.url))
    connection.channel().queue_declare("q")
    assert warrenmq_broker.delete_vhost("doomed")
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        connection.process_data_events(time_limit=5)
    assert (closed.value.reply_code, closed.value.reply_text) == (
        320,
        "CONNECTION_FORCED - vhost 'doomed' is deleted",
    )
    assert warrenmq_broker.call(lambda: "doomed" in warrenmq_broker.broker.vhosts) is False


def test_forced_channel_error_closes_the_channel_only(vhost: VhostHandle) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(vhost.url))
    channel = connection.channel()
    assert vhost.channel_error(406, "injected") == 1
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
        channel.queue_declare("q")
    assert (closed.value.reply_code, closed.value.reply_text) == (406, "PRECONDITION_FAILED - injected")
    assert connection.is_open
    connection.close()


def test_blocked_and_unblocked_reach_clients_with_the_capability(vhost: VhostHandle) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(vhost.url))
    seen: list[str] = []
    connection.add_on_connection_blocked_callback(lambda _c, method: seen.append(method.method.NAME))
    connection.add_on_connection_unblocked_callback(lambda _c, method: seen.append(method.method.NAME))
    with _raw(vhost) as raw:  # announces no connection.blocked capability
        assert vhost.block("low on memory") == 1
        assert vhost.unblock() == 1
        vhost.settle()
        while len(seen) < 2:
            connection.process_data_events(time_limit=0.05)
        assert seen == ["Connection.Blocked", "Connection.Unblocked"]
        raw.sock.setblocking(False)
        with pytest.raises(BlockingIOError):
            raw.sock.recv(1)
    connection.close()


def test_held_confirms_are_released_in_order(vhost: VhostHandle) -> None:
    with _raw(vhost) as client:
        client.send(commands.Confirm.Select(), 1)
        client.expect(commands.Confirm.SelectOk)
        vhost.hold_confirms()
        client.publish(1, "", "nowhere", b"a")
        client.publish(1, "", "nowhere", b"b")
        vhost.settle()
        client.sock.setblocking(False)
        with pytest.raises(BlockingIOError):
            client.sock.recv(1)
        client.sock.setblocking(True)
        assert vhost.release_confirms() == 1
        ack = client.expect(commands.Basic.Ack)
        assert (ack.delivery_tag, ack.multiple) == (2, True)


def test_nacked_confirm_keeps_the_confirm_stream_in_order(vhost: VhostHandle) -> None:
    with _raw(vhost) as client:
        client.send(commands.Confirm.Select(), 1)
        client.expect(commands.Confirm.SelectOk)
        client.publish(1, "", "nowhere", b"a")
        client.expect(commands.Basic.Ack)
        client.publish(1, "", "nowhere", b"b")
        vhost.nack_next_confirms(1)
        client.publish(1, "", "nowhere", b"c")
        client.publish(1, "", "nowhere", b"d")
        confirms = [client.expect(commands.Basic.Ack | commands.Basic.Nack) for _ in range(3)]  # type: ignore[arg-type]
        assert [(type(c).__name__, c.delivery_tag, c.multiple) for c in confirms] == [
            ("Ack", 2, False),
            ("Nack", 3, False),
            ("Ack", 4, False),
        ]


def test_wait_for_consumers_wakes_when_another_client_consumes(vhost: VhostHandle) -> None:
    setup = pika.BlockingConnection(pika.URLParameters(vhost.url))
    setup.channel().queue_declare("tasks")
    done = threading.Event()

    def consumer() -> None:
        connection = pika.BlockingConnection(pika.URLParameters(vhost.url))
        channel = connection.channel()
        channel.basic_consume("tasks", lambda *args: None)
        done.wait(10)
        connection.close()

    thread = threading.Thread(target=consumer)
    thread.start()
    try:
        vhost.wait_for_consumers("tasks", 1)
        assert [c.queue for c in vhost.consumers("tasks")] == ["tasks"]
    finally:
        done.set()
        thread.join()
    vhost.wait_for_consumers("tasks", 0)
    setup.close()


def test_a_wait_that_never_comes_true_times_out_with_what_it_waited_for(vhost: VhostHandle) -> None:
    with pytest.raises(WaitTimeout) as timeout:
        vhost.wait_until_acked("never", count=1, timeout=0.05)
    assert "1 ack(s) on queue 'never'" in str(timeout.value)


def test_unroutable_mandatory_message_is_recorded_as_returned(vhost: VhostHandle) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(vhost.url))
    channel = connection.channel()
    channel.basic_publish("amq.direct", "nobody", b"x", mandatory=True)
    vhost.settle()
    (record,) = vhost.history(exchange="amq.direct")
    assert record.fates() == ["published", "routed", "returned"]
    assert record.fate() == "returned"
    connection.close()


async def test_evicted_messages_leave_the_history_indexes() -> None:
    """Past max_messages the oldest record goes, and with it its entries in the per-queue and per-exchange
    indexes (they grew without bound before)."""
    async with EmbeddedBroker(name_seed=3) as embedded:
        inspector = embedded.inspector
        inspector.max_messages = 3
        connection = await aio_pika.connect(embedded.url)
        channel = await connection.channel()
        queues = [await channel.declare_queue(f"evict-{n}", exclusive=True) for n in range(2)]
        for number in range(6):
            await channel.default_exchange.publish(
                aio_pika.Message(str(number).encode()), routing_key=queues[number % 2].name
            )
        await inspector.settle()
        assert [record.body for record in inspector.history(exchange="")] == [b"3", b"4", b"5"]
        assert [record.body for record in inspector.history(queue="evict-0")] == [b"4"]
        assert [record.body for record in inspector.history(queue="evict-1")] == [b"3", b"5"]
        assert [len(ids) for ids in inspector._by_queue.values()] == [1, 2]
        assert [len(ids) for ids in inspector._by_exchange.values()] == [3]
        await connection.close()
