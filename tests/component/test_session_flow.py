"""Session behaviour that needs exact frame order: confirms after returns, consume-ok before deliveries."""

from __future__ import annotations

from pamqp import commands

from tests.component.harness import Client


def test_mandatory_return_precedes_the_confirm() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Confirm.Select())
    client.received()
    client.send(1, commands.Basic.Publish(exchange="", routing_key="nowhere", mandatory=True))
    from pamqp import header

    client.send(1, header.ContentHeader(0, 0, commands.Basic.Properties()))
    kinds = [type(value).__name__ for _, value in client.received()]
    assert kinds == ["Return", "ContentHeader", "Ack"]


def test_confirms_for_a_batch_are_one_multiple_ack() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Confirm.Select())
    client.send(1, commands.Queue.Declare(queue="q"))
    client.received()
    batch = b""
    from pamqp import frame, header
    from pamqp.body import ContentBody

    for _ in range(5):
        batch += frame.marshal(commands.Basic.Publish(exchange="", routing_key="q"), 1)
        batch += frame.marshal(header.ContentHeader(0, 1, commands.Basic.Properties()), 1)
        batch += frame.marshal(ContentBody(b"x"), 1)
    client.feed(batch)
    acks = [value for _, value in client.received() if isinstance(value, commands.Basic.Ack)]
    assert [(ack.delivery_tag, ack.multiple) for ack in acks] == [(5, True)]


def test_consume_ok_precedes_the_first_delivery() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    client.publish(1, b"hello", "q")
    client.received()
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c1"))
    kinds = [type(value).__name__ for _, value in client.received()]
    assert kinds[:3] == ["ConsumeOk", "Deliver", "ContentHeader"]


def test_server_cancel_is_sent_only_to_clients_with_the_capability() -> None:
    for capable in (True, False):
        client = Client()
        client.handshake(capabilities={"consumer_cancel_notify": capable})
        client.open_channel(1)
        client.send(1, commands.Queue.Declare(queue="q"))
        client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c1"))
        client.open_channel(2)
        client.received()
        client.send(2, commands.Queue.Delete(queue="q"))
        cancels = [value for _, value in client.received() if isinstance(value, commands.Basic.Cancel)]
        assert [c.consumer_tag for c in cancels] == (["c1"] if capable else [])


def test_delivery_body_is_split_at_the_negotiated_frame_max() -> None:
    client = Client()
    client.handshake(frame_max=4096)
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    body = bytes(range(256)) * 40  # 10240 bytes: three body frames of at most 4088 bytes
    client.publish(1, body, "q")
    client.received()
    client.send(1, commands.Basic.Get(queue="q", no_ack=True))
    frames = [value for _, value in client.received()]
    bodies = [value.value for value in frames if type(value).__name__ == "ContentBody"]
    assert [len(b) for b in bodies] == [4088, 4088, 2064]
    assert b"".join(bodies) == body


def test_queued_messages_of_one_header_share_its_bytes() -> None:
    # Publishers repeat their content header: a backlog keeps one copy of it, whichever scanner read it.
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="backlog"))
    for index in range(3):
        client.publish(1, b"body %d" % index, "backlog", delivery_mode=1, priority=2)
    queue = client.broker.vhosts["/"].queues["backlog"]
    messages = [envelope.message for envelope in queue.ready_envelopes()]
    assert [m.body for m in messages] == [b"body 0", b"body 1", b"body 2"]
    assert messages[0].header_payload is messages[1].header_payload is messages[2].header_payload
