"""Observers see every message fate and topology change in order; nothing is emitted without an observer."""

from __future__ import annotations

from pamqp import commands

from broker.core.events.events import Fate, Topology
from tests.component.harness import Client, Recorder


def _client() -> tuple[Client, Recorder]:
    client = Client()
    recorder = Recorder()
    client.broker.events.attach(recorder)
    client.handshake()
    client.open_channel(1)
    return client, recorder


def test_publish_deliver_ack_fates_share_one_message_id() -> None:
    client, recorder = _client()
    client.send(1, commands.Queue.Declare(queue="q"))
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c"))
    client.publish(1, b"x", "q")
    client.send(1, commands.Basic.Ack(delivery_tag=1))
    assert recorder.fates() == [("published", None), ("routed", None), ("delivered", "q"), ("acked", "q")]
    assert len({event.message_id for event in recorder.messages}) == 1
    assert recorder.messages[1].detail["queues"] == ["q"]
    assert recorder.messages[2].detail["consumer_tag"] == "c"


def test_unroutable_mandatory_publish_is_returned() -> None:
    client, recorder = _client()
    client.publish(1, b"x", "nowhere")
    client.send(1, commands.Basic.Publish(exchange="", routing_key="nowhere", mandatory=True))
    from pamqp import header

    client.send(1, header.ContentHeader(0, 0, commands.Basic.Properties()))
    assert [fate for fate, _ in recorder.fates()] == [
        "published",
        "routed",
        "published",
        "routed",
        "returned",
    ]


def test_nack_requeue_reject_drop_and_close_requeue() -> None:
    client, recorder = _client()
    client.send(1, commands.Queue.Declare(queue="q"))
    client.publish(1, b"a", "q")
    client.publish(1, b"b", "q")
    client.send(1, commands.Basic.Get(queue="q"))
    client.send(1, commands.Basic.Nack(delivery_tag=1, requeue=True))
    client.send(1, commands.Basic.Get(queue="q"))
    client.send(1, commands.Basic.Reject(delivery_tag=2, requeue=False))
    client.send(1, commands.Basic.Get(queue="q"))
    client.send(1, commands.Channel.Close(reply_code=200, reply_text="", class_id=0, method_id=0))
    fates = [fate for fate, _ in recorder.fates()][4:]
    assert fates == [
        "delivered",
        "nacked",
        "requeued",
        "delivered",
        "nacked",
        "dropped",
        "delivered",
        "requeued",
    ]


def test_purge_and_delete_drop_ready_messages_and_report_topology() -> None:
    client, recorder = _client()
    client.send(1, commands.Queue.Declare(queue="q"))
    client.send(1, commands.Queue.Bind(queue="q", exchange="amq.direct", routing_key="k"))
    client.publish(1, b"a", "q")
    client.send(1, commands.Queue.Purge(queue="q"))
    client.publish(1, b"b", "q")
    client.send(1, commands.Queue.Delete(queue="q"))
    drops = [event.detail["reason"] for event in recorder.messages if event.fate is Fate.DROPPED]
    assert drops == ["purged", "queue_deleted"]
    kinds = [event.kind for event in recorder.topology]
    assert kinds == [Topology.QUEUE_DECLARED, Topology.BOUND, Topology.UNBOUND, Topology.QUEUE_DELETED]


def test_detached_observer_sees_nothing_more() -> None:
    client = Client()
    recorder = Recorder()
    detach = client.broker.events.attach(recorder)
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    detach()
    client.publish(1, b"x", "q")
    assert recorder.messages == []
    assert len(recorder.topology) == 1


def test_silenced_heartbeats_are_not_sent_while_the_fault_is_on() -> None:
    from broker.session.faults import SessionFaults
    from tests.component.harness import PROTOCOL_HEADER

    client = Client()
    client.handshake()
    session = client.session
    session.heartbeat.interval_s = 2
    session.faults = SessionFaults()
    session.faults.silent_heartbeats.add("/")
    client.transport.buffer.clear()
    session.heartbeat_tick()
    assert bytes(client.transport.buffer) == b""
    session.faults.silent_heartbeats.clear()
    session.heartbeat_tick()
    assert bytes(client.transport.buffer) == b"\x08\x00\x00\x00\x00\x00\x00\xce"
    assert PROTOCOL_HEADER
