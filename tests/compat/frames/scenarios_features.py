"""Raw scenarios for the behaviours strict clients trip over: bodies split at a small frame_max, direct
reply-to, confirms mixed with mandatory returns, recover and cancel in one read, queue.delete of a queue its
own channel consumes, heartbeats on a short interval, and the consistent-hash exchange by header and by
property (on the plugins oracle)."""

from __future__ import annotations

from collections.abc import Callable

from pamqp import commands as c
from pamqp.common import FieldTable

from protocol.codec import make_method

from .raw import RawClient, method, publish
from .raw_table import plugin_raw_scenario, raw_scenario

Open = Callable[[], RawClient]
REPLY_TO = "amq.rabbitmq.reply-to"


@raw_scenario
def bodies_split_at_frame_max(open_client: Open, prefix: str) -> None:
    client = open_client()
    client.handshake(frame_max=4096)
    client.open_channel(1)
    q = f"{prefix}-q"
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    body = bytes(range(256)) * 40  # 10,240 octets: three body frames of at most 4088
    headers: FieldTable = {f"h{n}": "v" * 50 for n in range(10)}
    client.step(publish(1, "", q, body, c.Basic.Properties(headers=headers), frame_max=4096))
    client.step(method(1, c.Basic.Get(queue=q, no_ack=True)), until=["Basic.GetOk"], settle_s=0.1)
    client.step(
        publish(1, "", q, b"", frame_max=4096) + method(1, c.Basic.Get(queue=q)), until=["Basic.GetOk"]
    )
    client.close()


@raw_scenario
def direct_reply_to(open_client: Open, prefix: str) -> None:
    requester, server = open_client(), open_client()
    requester.handshake()
    server.handshake()
    requester.open_channel(1)
    server.open_channel(1)
    q = f"{prefix}-rpc"
    server.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    requester.step(
        method(1, c.Basic.Consume(queue=REPLY_TO, no_ack=True, consumer_tag="r")), until=["Basic.ConsumeOk"]
    )
    # Confirmed, so that the ping is in the queue before the other connection's basic.get asks for it.
    requester.step(method(1, c.Confirm.Select()), until=["Confirm.SelectOk"])
    ping = publish(1, "", q, b"ping", c.Basic.Properties(reply_to=REPLY_TO, correlation_id="1"))
    requester.step(ping, until=["Basic.Ack"])
    answer = server.step(method(1, c.Basic.Get(queue=q, no_ack=True)), until=["Basic.GetOk"], settle_s=0.1)
    reply_to = next(
        value
        for record in answer
        if record["kind"] == "header"
        for name, _, value in record["props"]
        if name == "reply_to"
    )
    # make_method: pamqp's constructor refuses the name's characters, RabbitMQ does not.
    passive = make_method(c.Queue.Declare, queue=reply_to, passive=True)
    server.step(method(1, passive), until_any=["Queue.DeclareOk", "Channel.Close"])
    server.open_channel(2)
    # RabbitMQ 3.10 delivers the reply and returns it NO_ROUTE too (a direct reply is no queue to mandatory).
    server.step(
        publish(2, "", reply_to, b"pong", c.Basic.Properties(correlation_id="1"), mandatory=True),
        until=["Basic.Return"],
    )
    requester.step(b"", until=["Basic.Deliver"], settle_s=0.1)
    requester.close()
    server.close()


@raw_scenario
def confirms_mixed_with_returns(open_client: Open, prefix: str) -> None:
    # One publish per step: RabbitMQ coalesces the confirms pending when its channel goes idle into one
    # multiple=true ack, so several routable publishes in one read get one or several acks by timing.
    # Unroutable ones are confirmed while handled: several in one read get a return and an ack each, in
    # publish order.
    client = open_client()
    client.handshake()
    client.open_channel(1)
    q = f"{prefix}-q"
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    client.step(method(1, c.Confirm.Select()), until=["Confirm.SelectOk"])
    for n in range(4):
        routed = q if n % 2 else f"{prefix}-nowhere"
        client.step(publish(1, "", routed, f"m{n}".encode(), mandatory=True), until=["Basic.Ack"])
    unroutable = b"".join(
        publish(1, "", f"{prefix}-nowhere", f"u{n}".encode(), mandatory=True) for n in range(4)
    )
    client.step(unroutable, until=["Basic.Ack"], count=4)
    client.close()


@raw_scenario
def recover_then_cancel_in_one_read(open_client: Open, prefix: str) -> None:
    client = open_client()
    client.handshake()
    client.open_channel(1)
    client.open_channel(2)
    q = f"{prefix}-q"
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    client.step(b"".join(publish(1, "", q, f"m{n}".encode()) for n in range(3)))
    client.step(method(1, c.Basic.Consume(queue=q, consumer_tag="first")), until=["Basic.Deliver"], count=3)
    client.step(method(2, c.Basic.Consume(queue=q, consumer_tag="next")), until=["Basic.ConsumeOk"])
    client.step(
        method(1, c.Basic.Recover(requeue=True)) + method(1, c.Basic.Cancel(consumer_tag="first")),
        until=["Basic.CancelOk"],
        settle_s=0.3,
    )
    client.close()


@raw_scenario
def ack_makes_room_before_later_methods(open_client: Open, prefix: str) -> None:
    # With prefetch 1, the ack frees the consumer: where does the next delivery land relative to the answer to
    # the method that followed the ack in the same read? (A passive exchange.declare: a queue.declare's
    # message_count would race the ack on RabbitMQ, whose stat call goes through a delegate process.)
    client = open_client()
    client.handshake()
    client.open_channel(1)
    q = f"{prefix}-q"
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    client.step(method(1, c.Basic.Qos(prefetch_count=1)), until=["Basic.QosOk"])
    client.step(b"".join(publish(1, "", q, f"m{n}".encode()) for n in range(2)))
    client.step(method(1, c.Basic.Consume(queue=q, consumer_tag="c")), until=["Basic.Deliver"])
    client.step(
        method(1, c.Basic.Ack(delivery_tag=1))
        + method(1, c.Exchange.Declare(exchange="amq.direct", passive=True)),
        until=["Exchange.DeclareOk", "Basic.Deliver"],
        settle_s=0.2,
    )
    client.close()


@raw_scenario
def queue_delete_answers_before_cancelling_its_consumers(open_client: Open, prefix: str) -> None:
    # A queue.delete on the channel that consumes the queue (kombu deletes its test queues so, and fails on a
    # basic.cancel before delete-ok). One case per channel, each on a queue of its own: two consumers; an ack
    # that frees the next message in the same read; nowait with another method in the read; the client's own
    # basic.cancel in the read.
    client = open_client()
    client.handshake()
    queues = [f"{prefix}-q{n}" for n in range(1, 5)]
    for channel, q in enumerate(queues, start=1):
        client.open_channel(channel)
        client.step(method(channel, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    for tag in ("a", "b"):
        client.step(method(1, c.Basic.Consume(queue=queues[0], consumer_tag=tag)), until=["Basic.ConsumeOk"])
    client.step(method(1, c.Queue.Delete(queue=queues[0])), until=["Basic.Cancel"], count=2)
    client.step(method(2, c.Basic.Qos(prefetch_count=1)), until=["Basic.QosOk"])
    client.step(b"".join(publish(2, "", queues[1], f"m{n}".encode()) for n in range(2)))
    client.step(method(2, c.Basic.Consume(queue=queues[1], consumer_tag="c")), until=["Basic.Deliver"])
    client.step(
        method(2, c.Basic.Ack(delivery_tag=1)) + method(2, c.Queue.Delete(queue=queues[1])),
        until=["Queue.DeleteOk", "Basic.Deliver", "Basic.Cancel"],
    )
    client.step(method(3, c.Basic.Consume(queue=queues[2], consumer_tag="d")), until=["Basic.ConsumeOk"])
    client.step(
        method(3, c.Queue.Delete(queue=queues[2], nowait=True))
        + method(3, c.Exchange.Declare(exchange="amq.direct", passive=True)),
        until=["Exchange.DeclareOk", "Basic.Cancel"],
    )
    client.step(method(4, c.Basic.Consume(queue=queues[3], consumer_tag="e")), until=["Basic.ConsumeOk"])
    client.step(
        method(4, c.Queue.Delete(queue=queues[3])) + method(4, c.Basic.Cancel(consumer_tag="e")),
        until=["Queue.DeleteOk", "Basic.CancelOk"],
    )
    client.close()


HEARTBEAT_S = 2


@raw_scenario
def heartbeats(open_client: Open, prefix: str) -> None:
    """Heartbeats negotiated at 2 s, then idle for 3.5 s: their cadence is compared by
    tests/compat/test_frames (heartbeat spacing in units of the interval); the transcript itself shows how
    many went out."""
    del prefix
    client = open_client()
    client.handshake(heartbeat=HEARTBEAT_S)
    client.step(b"", until=["never"], settle_s=0.0)  # reads for the step timeout: the connection idles
    client.step(b"", settle_s=0.5)
    client.close()


def _consistent_hash(
    open_client: Open, prefix: str, arguments: FieldTable, properties: Callable[[int], c.Basic.Properties]
) -> None:
    client = open_client()
    client.handshake()
    client.open_channel(1)
    x = f"{prefix}-hash"
    queues = [f"{prefix}-q{n}" for n in range(3)]
    client.step(
        method(1, c.Exchange.Declare(exchange=x, exchange_type="x-consistent-hash", arguments=arguments)),
        until=["Exchange.DeclareOk"],
    )
    for weight, queue in enumerate(queues, start=1):
        client.step(method(1, c.Queue.Declare(queue=queue, exclusive=True)), until=["Queue.DeclareOk"])
        client.step(
            method(1, c.Queue.Bind(queue=queue, exchange=x, routing_key=str(weight))), until=["Queue.BindOk"]
        )
    # No confirms: RabbitMQ coalesces them by timing. A passive declare on the publishing channel reaches each
    # queue after the messages that channel sent it.
    client.step(b"".join(publish(1, x, "", b"m", properties(n)) for n in range(60)))
    for queue in queues:
        client.step(method(1, c.Queue.Declare(queue=queue, passive=True)), until=["Queue.DeclareOk"])
    client.step(method(1, c.Exchange.Delete(exchange=x)), until=["Exchange.DeleteOk"])
    client.close()


@plugin_raw_scenario
def consistent_hash_by_header(open_client: Open, prefix: str) -> None:
    _consistent_hash(
        open_client, prefix, {"hash-header": "h"}, lambda n: c.Basic.Properties(headers={"h": f"key-{n}"})
    )


@plugin_raw_scenario
def consistent_hash_by_property(open_client: Open, prefix: str) -> None:
    _consistent_hash(
        open_client,
        prefix,
        {"hash-property": "message_id"},
        lambda n: c.Basic.Properties(message_id=f"id-{n}"),
    )
