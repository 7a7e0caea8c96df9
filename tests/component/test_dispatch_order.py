"""What an ack, nack, reject or recover makes deliverable is handed out before the queue serves the channel's
next request of the same read, as RabbitMQ's queue process orders its mailbox (RabbitMQ 3.10.8 sent these
frames every time; tests/compat/test_frame_order.py diffs them live).

A consumer ``A`` on queue ``q`` holds the first messages of m0, m1, m2 (all three, or one with prefetch 1);
then one read carries a settlement and the next method. Tokens: ``deliver(A,4,R,m0)`` consumer, delivery tag,
redelivered, body; method names otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest
from pamqp import commands, frame
from pamqp.body import ContentBody

from tests.component.harness import Client

RECOVER = commands.Basic.Recover(requeue=True)
ACK = commands.Basic.Ack(delivery_tag=1)
CASES: dict[str, tuple[int, tuple[Any, ...], str]] = {
    # name: (prefetch, methods of the read, what the broker sends)
    "recover then cancel": (
        0,
        (RECOVER, commands.Basic.Cancel(consumer_tag="A")),
        "Basic.RecoverOk deliver(A,4,R,m0) deliver(A,5,R,m1) deliver(A,6,R,m2) Basic.CancelOk",
    ),
    "recover, cancel, consume": (
        0,
        (
            RECOVER,
            commands.Basic.Cancel(consumer_tag="A"),
            commands.Basic.Consume(queue="q", consumer_tag="B"),
        ),
        "Basic.RecoverOk deliver(A,4,R,m0) deliver(A,5,R,m1) deliver(A,6,R,m2) Basic.CancelOk "
        "Basic.ConsumeOk",
    ),
    "ack then cancel": (
        1,
        (ACK, commands.Basic.Cancel(consumer_tag="A")),
        "deliver(A,2,n,m1) Basic.CancelOk",
    ),
    "nack then cancel": (
        1,
        (commands.Basic.Nack(delivery_tag=1, requeue=True), commands.Basic.Cancel(consumer_tag="A")),
        "deliver(A,2,R,m0) Basic.CancelOk",
    ),
    "reject then cancel": (
        1,
        (commands.Basic.Reject(delivery_tag=1, requeue=True), commands.Basic.Cancel(consumer_tag="A")),
        "deliver(A,2,R,m0) Basic.CancelOk",
    ),
    "ack then consume": (
        1,
        (ACK, commands.Basic.Consume(queue="q", consumer_tag="B")),
        "deliver(A,2,n,m1) Basic.ConsumeOk deliver(B,3,n,m2)",
    ),
    # The channel answers these itself: RabbitMQ's reply goes first, the queue's delivery after it.
    "ack then qos": (1, (ACK, commands.Basic.Qos(prefetch_count=1)), "Basic.QosOk deliver(A,2,n,m1)"),
    "recover then qos": (
        0,
        (RECOVER, commands.Basic.Qos(prefetch_count=7)),
        "Basic.RecoverOk Basic.QosOk deliver(A,4,R,m0) deliver(A,5,R,m1) deliver(A,6,R,m2)",
    ),
    "ack then cancel of another tag": (
        1,
        (ACK, commands.Basic.Cancel(consumer_tag="Z")),
        "Basic.CancelOk deliver(A,2,n,m1)",
    ),
    # The queue hands m1 to A before the purge (so purge-ok counts 1) and the get (m2, not m1); the channel
    # sends purge-ok / get-ok before that delivery, and get-ok takes the next delivery tag.
    "ack then purge": (1, (ACK, commands.Queue.Purge(queue="q")), "Queue.PurgeOk(1) deliver(A,2,n,m1)"),
    "ack then get": (1, (ACK, commands.Basic.Get(queue="q")), "get-ok(2,n,0,m2) deliver(A,3,n,m1)"),
    # rabbit_amqqueue_process answers stat (priority 7) before an ack (4): declare-ok counts m1 and m2.
    "ack then declare": (
        1,
        (ACK, commands.Queue.Declare(queue="q", passive=True)),
        "Queue.DeclareOk(2) deliver(A,2,n,m1)",
    ),
    "recover then get": (
        0,
        (RECOVER, commands.Basic.Get(queue="q")),
        "Basic.RecoverOk Basic.GetEmpty deliver(A,4,R,m0) deliver(A,5,R,m1) deliver(A,6,R,m2)",
    ),
}


def _tokens(frames: list[tuple[int, Any]]) -> str:
    out: list[str] = []
    for _, value in frames:
        if isinstance(value, commands.Basic.Deliver):
            out.append(
                f"deliver({value.consumer_tag},{value.delivery_tag},{'R' if value.redelivered else 'n'}"
            )
        elif isinstance(value, commands.Basic.GetOk):
            flag = "R" if value.redelivered else "n"
            out.append(f"get-ok({value.delivery_tag},{flag},{value.message_count}")
        elif isinstance(value, ContentBody):
            out[-1] += f",{value.value.decode()})"
        elif isinstance(value, commands.Queue.PurgeOk | commands.Queue.DeclareOk):
            out.append(f"{value.name}({value.message_count})")
        elif type(value).__name__ != "ContentHeader":
            out.append(value.name)
    return " ".join(out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_settlements_are_dispatched_before_the_next_queue_request(name: str) -> None:
    prefetch, methods, expected = CASES[name]
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    for body in (b"m0", b"m1", b"m2"):
        client.publish(1, body, "q")
    if prefetch:
        client.send(1, commands.Basic.Qos(prefetch_count=prefetch))
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="A"))
    client.received()
    client.feed(b"".join(frame.marshal(method, 1) for method in methods))
    assert _tokens(client.received()) == expected
