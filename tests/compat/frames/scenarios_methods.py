"""Raw scenarios: every method of every AMQP 0-9-1 class, and an error on each, so every channel.close and
connection.close carries its reply code, text, class and method ids as RabbitMQ sends them.

Channel errors each get a channel of their own on one connection (the client answers close-ok in the next
step); connection errors each get a connection of their own.
"""

from __future__ import annotations

from collections.abc import Callable

from pamqp import commands as c

from .raw import RawClient, content, method, publish, raw_frame
from .raw_table import raw_scenario

Open = Callable[[], RawClient]
CLOSE_OK = "Channel.CloseOk"


def _fatal(open_client: Open, frames: bytes) -> None:
    """On a connection of its own with channel 1 open: send what closes the connection, answer close-ok."""
    client = open_client()
    client.handshake()
    client.open_channel(1)
    client.step(frames, until=["Connection.Close"])
    client.step(method(0, c.Connection.CloseOk()), closed=True)


def _refused(client: RawClient, channel: int, frames: bytes, open_client: Open | None = None) -> RawClient:
    """Open ``channel``, send what is refused, answer the broker's channel.close; when the refusal is a
    connection error (a hard reply code), answer its connection.close and go on with a new connection (from
    ``open_client``). Returns the client to use next."""
    client.open_channel(channel)
    answer = client.step(frames, until_any=["Channel.Close", "Connection.Close"])
    methods = {record.get("method") for record in answer}
    if "Channel.Close" in methods:
        client.step(method(channel, c.Channel.CloseOk()))
    if "Connection.Close" not in methods:
        return client
    client.step(method(0, c.Connection.CloseOk()), closed=True)
    assert open_client is not None, "a connection error where a channel error was expected"
    fresh = open_client()
    fresh.handshake()
    return fresh


@raw_scenario
def connection_class(open_client: Open, prefix: str) -> None:
    client = open_client()
    client.handshake()
    client.step(
        method(0, c.Connection.UpdateSecret(new_secret="s", reason="r")), until=["Connection.UpdateSecretOk"]
    )
    client.close()
    # Refused at open (530); tune-ok values out of range are refused silently (scenarios_preauth).
    refused = open_client()
    refused.step(b"AMQP\x00\x00\x09\x01", until=["Connection.Start"])
    refused.step(
        method(0, c.Connection.StartOk(client_properties={}, response="\0guest\0guest", mechanism="PLAIN")),
        until=["Connection.Tune"],
    )
    refused.step(
        method(0, c.Connection.TuneOk(frame_max=131072, channel_max=2047))
        + method(0, c.Connection.Open(virtual_host=f"{prefix}-no-vhost")),
        until=["Connection.Close"],
    )
    refused.step(method(0, c.Connection.CloseOk()), closed=True)
    # Running connection: a second connection.open (504), a method on an unopened channel (504).
    for frames in (
        method(0, c.Connection.Open(virtual_host="/")),
        method(5, c.Queue.Declare(queue=f"{prefix}-q")),
        method(0, c.Connection.TuneOk(frame_max=131072, channel_max=2047)),
    ):
        refused = open_client()
        refused.handshake()
        refused.step(frames, until=["Connection.Close"])
        refused.step(method(0, c.Connection.CloseOk()), closed=True)


@raw_scenario
def connection_after_close(open_client: Open, prefix: str) -> None:
    """After close-ok the socket is the client's to end (rabbit_reader's state closed,
    broker/session/closing.py): frames on any channel, a heartbeat and connection.open get no answer, a second
    connection.close a second close-ok, and the client's close-ok ends the connection. The same after the
    broker's own connection.close. A broker that closes the socket behind its close-ok sends none of this:
    the client stops at the end of the socket."""
    del prefix
    bye = c.Connection.Close(reply_code=320, reply_text="CONNECTION_FORCED", class_id=0, method_id=0)
    again = c.Connection.Close(reply_code=200, reply_text="again", class_id=0, method_id=0)
    ignored = (
        method(1, c.Basic.Qos(prefetch_count=1))
        + method(2, c.Channel.Open())
        + raw_frame(8, 0, b"")
        + method(0, c.Connection.Open(virtual_host="/"))
    )
    client = open_client()
    client.handshake()
    client.open_channel(1)
    closed_by_broker = open_client()
    closed_by_broker.handshake()
    for connection, closing in ((client, method(0, bye)), (closed_by_broker, method(3, c.Basic.Qos()))):
        connection.step(closing, until_any=["Connection.CloseOk", "Connection.Close"])
        for frames, answer in ((ignored, []), (method(0, again), ["Connection.CloseOk"])):
            if not connection.closed:
                connection.step(frames, until=answer, settle_s=0.0 if answer else 0.3)
        if not connection.closed:
            connection.step(method(0, c.Connection.CloseOk()), closed=True)


@raw_scenario
def channel_class(open_client: Open, prefix: str) -> None:
    del prefix
    client = open_client()
    client.handshake()
    client.open_channel(1)
    client.step(method(1, c.Channel.Flow(active=True)), until=["Channel.FlowOk"])
    client.step(
        method(1, c.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)),
        until=[CLOSE_OK],
    )
    client.close()
    _fatal(open_client, method(1, c.Channel.Flow(active=False)))  # 540 NOT_IMPLEMENTED, a hard error
    _fatal(open_client, method(1, c.Channel.Open()))  # second channel.open: 504, a hard error
    # channel_max counts the channels open, not the number picked: 65535 opens under channel_max 2; a
    # closed channel frees its place; the third open channel is refused (530, class and method 0).
    limited = open_client()
    limited.handshake(channel_max=2)
    limited.open_channel(65535)
    limited.open_channel(1)
    limited.step(
        method(1, c.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)),
        until=[CLOSE_OK],
    )
    limited.open_channel(2)
    limited.step(method(3, c.Channel.Open()), until=["Connection.Close"])
    limited.step(method(0, c.Connection.CloseOk()), closed=True)


@raw_scenario
def exchange_class(open_client: Open, prefix: str) -> None:
    client = open_client()
    client.handshake()
    client.open_channel(1)
    x, y = f"{prefix}-x", f"{prefix}-y"
    client.step(
        method(1, c.Exchange.Declare(exchange=x, exchange_type="topic")), until=["Exchange.DeclareOk"]
    )
    client.step(
        method(1, c.Exchange.Declare(exchange=y, exchange_type="fanout")), until=["Exchange.DeclareOk"]
    )
    client.step(method(1, c.Exchange.Declare(exchange=x, passive=True)), until=["Exchange.DeclareOk"])
    client.step(
        method(1, c.Exchange.Bind(destination=y, source=x, routing_key="a.#")), until=["Exchange.BindOk"]
    )
    client.step(
        method(1, c.Exchange.Unbind(destination=y, source=x, routing_key="a.#")), until=["Exchange.UnbindOk"]
    )
    client.step(method(1, c.Exchange.Declare(exchange=x, exchange_type="topic", nowait=True)))
    client.step(method(1, c.Exchange.Delete(exchange=y)), until=["Exchange.DeleteOk"])
    # Not refused: unbinding from a missing destination is a no-op on RabbitMQ.
    unbind = c.Exchange.Unbind(destination=f"{prefix}-missing", source=x, routing_key="k")
    client.step(method(1, unbind), until=["Exchange.UnbindOk"])
    channel = 2
    for frames in (
        c.Exchange.Declare(exchange=f"{prefix}-missing", passive=True),  # 404
        c.Exchange.Declare(exchange=x, exchange_type="direct"),  # 406 inequivalent type
        c.Exchange.Declare(exchange="amq.mine", exchange_type="direct"),  # 403 reserved
        c.Exchange.Delete(exchange="amq.direct"),  # 403
        c.Exchange.Bind(destination=x, source=f"{prefix}-missing", routing_key="k"),  # 404
        c.Exchange.Bind(destination=x, source=""),  # 403 default exchange
    ):
        _refused(client, channel, method(channel, frames))
        channel += 1
    client.step(method(1, c.Exchange.Delete(exchange=x, if_unused=True)), until=["Exchange.DeleteOk"])
    client.close()
    # An unknown type: 3.10 refuses it with 503 on the connection, 3.13 (and WarrenMQ) with 406 on the channel
    # (docs/deviations.md, Deliberate deviations). The client reads the refusal and drops the socket.
    refused = open_client()
    refused.handshake()
    refused.open_channel(1)
    unknown = c.Exchange.Declare(exchange=f"{prefix}-z", exchange_type="no-such-type")
    refused.step(method(1, unknown), until_any=["Channel.Close", "Connection.Close"])


@raw_scenario
def queue_class(open_client: Open, prefix: str) -> None:
    client = open_client()
    client.handshake()
    client.open_channel(1)
    q = f"{prefix}-q"
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    client.step(method(1, c.Queue.Declare(queue="", exclusive=True)), until=["Queue.DeclareOk"])
    client.step(
        method(1, c.Queue.Bind(queue=q, exchange="amq.direct", routing_key="k")), until=["Queue.BindOk"]
    )
    client.step(
        publish(1, "amq.direct", "k", b"m") + method(1, c.Queue.Purge(queue=q)), until=["Queue.PurgeOk"]
    )
    client.step(
        method(1, c.Queue.Unbind(queue=q, exchange="amq.direct", routing_key="k")), until=["Queue.UnbindOk"]
    )
    # Not in one read with a publish: RabbitMQ's passive declare asks the queue through a delegate process,
    # which may overtake the publish (message_count 0 or 1 by timing).
    client.step(publish(1, "", q, b"m"))
    client.step(method(1, c.Queue.Declare(queue=q, passive=True)), until=["Queue.DeclareOk"])
    # Not refused: RabbitMQ does not compare the durable flag of an exclusive queue's redeclaration.
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True, durable=True)), until=["Queue.DeclareOk"])
    channel = 2
    for frames in (
        c.Queue.Declare(queue=f"{prefix}-missing", passive=True),  # 404
        c.Queue.Declare(queue="amq.q", exclusive=True),  # 403 reserved
        c.Queue.Bind(queue=q, exchange=f"{prefix}-missing"),  # 404
        c.Queue.Bind(queue=f"{prefix}-missing", exchange="amq.direct"),  # 404
        c.Queue.Purge(queue=f"{prefix}-missing"),  # 404
        c.Queue.Delete(queue=q, if_empty=True),  # 406 not empty
        c.Queue.Declare(queue=q, exclusive=True, arguments={"x-max-length": "ten"}),  # 406 bad argument
        c.Queue.Declare(queue=f"{prefix}-s", exclusive=True, arguments={"x-queue-type": "stream"}),
    ):
        client = _refused(client, channel, method(channel, frames), open_client)
        channel += 1
    other = open_client()
    other.handshake()
    _refused(other, 1, method(1, c.Queue.Declare(queue=q, passive=True)))  # 405 exclusive elsewhere
    other.close()
    client.step(method(1, c.Queue.Delete(queue=q)), until=["Queue.DeleteOk"])
    client.step(method(1, c.Queue.Delete(queue=q)), until=["Queue.DeleteOk"])  # missing: ok, 0
    client.close()


@raw_scenario
def basic_class(open_client: Open, prefix: str) -> None:
    client = open_client()
    client.handshake()
    client.open_channel(1)
    q = f"{prefix}-q"
    props = c.Basic.Properties(
        content_type="text/plain",
        headers={"n": 1, "s": "v", "t": True, "l": [1, "a"], "f": {"k": 2.5}},
        delivery_mode=2,
        priority=3,
        correlation_id="id",
        reply_to="r",
        expiration="60000",
        message_id="m",
        message_type="t",
        app_id="a",
    )
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    client.step(method(1, c.Basic.Qos(prefetch_count=2)), until=["Basic.QosOk"])
    client.step(publish(1, "", q, b"a" * 300, props) + publish(1, "", q, b"b") + publish(1, "", q, b"c"))
    client.step(method(1, c.Basic.Get(queue=q)), until=["Basic.GetOk"])
    client.step(method(1, c.Basic.Reject(delivery_tag=1, requeue=True)))
    client.step(method(1, c.Basic.Consume(queue=q, consumer_tag="t1")), until=["Basic.Deliver"], count=2)
    client.step(method(1, c.Basic.Ack(delivery_tag=2)), until=["Basic.Deliver"])
    client.step(
        method(1, c.Basic.Nack(delivery_tag=4, multiple=True, requeue=True)), until=["Basic.Deliver"], count=2
    )
    client.step(
        method(1, c.Basic.Recover(requeue=True)), until=["Basic.RecoverOk", "Basic.Deliver"], settle_s=0.2
    )
    client.step(method(1, c.Basic.Cancel(consumer_tag="t1")), until=["Basic.CancelOk"])
    client.step(method(1, c.Basic.Ack(delivery_tag=0, multiple=True)))
    client.step(method(1, c.Basic.Get(queue=q, no_ack=True)), until=["Basic.GetEmpty"])
    client.step(publish(1, "", f"{prefix}-nowhere", b"r", mandatory=True), until=["Basic.Return"])
    client.step(method(1, c.Basic.Consume(queue=q, consumer_tag="", no_ack=True)), until=["Basic.ConsumeOk"])
    channel = 3
    for frames in (
        method(3, c.Basic.Consume(queue=f"{prefix}-missing")),  # 404
        method(4, c.Basic.Get(queue=f"{prefix}-missing")),  # 404
        publish(5, f"{prefix}-missing", "k", b"x"),  # 404 on basic.publish
        method(6, c.Basic.Ack(delivery_tag=7)),  # 406 unknown delivery tag
        method(7, c.Basic.Reject(delivery_tag=7)),
        method(8, c.Basic.Nack(delivery_tag=7)),
        publish(9, "", q, b"x", c.Basic.Properties(expiration="soon")),  # 406 invalid expiration
        publish(10, "amq.direct", "k", b"x", c.Basic.Properties(user_id="someone")),  # 406 user_id
    ):
        _refused(client, channel, frames)
        channel += 1
    client.open_channel(20)
    client.step(method(20, c.Queue.Declare(queue=q, passive=True)), until=["Queue.DeclareOk"])
    # Two steps: in one read RabbitMQ's connection error overtakes the first consume-ok in its channel's
    # writer.
    client.step(method(20, c.Basic.Consume(queue=q, consumer_tag="dup")), until=["Basic.ConsumeOk"])
    client.step(method(20, c.Basic.Consume(queue=q, consumer_tag="dup")), until=["Connection.Close"])  # 530
    client.step(method(0, c.Connection.CloseOk()), closed=True)
    _fatal(open_client, method(1, c.Basic.Qos(prefetch_size=10)))  # 540 NOT_IMPLEMENTED
    _fatal(open_client, method(1, c.Basic.Recover(requeue=False)))  # 540
    # 540 immediate=true: RabbitMQ judges the publish once its content has arrived.
    _fatal(
        open_client, method(1, c.Basic.Publish(exchange="", routing_key=q, immediate=True)) + content(1, b"i")
    )


@raw_scenario
def confirm_and_tx_classes(open_client: Open, prefix: str) -> None:
    client = open_client()
    client.handshake()
    q = f"{prefix}-q"
    client.open_channel(1)
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    client.step(method(1, c.Confirm.Select()), until=["Confirm.SelectOk"])
    # One publish per step: two routed publishes in one read get one multiple=true ack or two by timing.
    client.step(publish(1, "", q, b"a"), until=["Basic.Ack"])
    client.step(publish(1, "", q, b"b"), until=["Basic.Ack"])
    client.step(method(1, c.Confirm.Select(nowait=True)) + publish(1, "", q, b"c"), until=["Basic.Ack"])
    client.open_channel(2)
    client.step(method(2, c.Tx.Select()), until=["Tx.SelectOk"])
    client.step(publish(2, "", q, b"t") + method(2, c.Tx.Rollback()), until=["Tx.RollbackOk"])
    client.step(publish(2, "", q, b"t") + method(2, c.Tx.Commit()), until=["Tx.CommitOk"])
    client.step(method(2, c.Basic.Get(queue=q)), until=["Basic.GetOk"])
    client.step(method(2, c.Basic.Ack(delivery_tag=1)) + method(2, c.Tx.Commit()), until=["Tx.CommitOk"])
    client.step(method(2, c.Queue.Declare(queue=q, passive=True)), until=["Queue.DeclareOk"])
    _refused(client, 3, method(3, c.Tx.Commit()))  # 406 not transactional
    _refused(client, 4, method(4, c.Tx.Rollback()))
    _refused(client, 5, method(5, c.Tx.Select()) + method(5, c.Confirm.Select()))  # 406 transactional
    _refused(client, 6, method(6, c.Confirm.Select()) + method(6, c.Tx.Select()))  # 406 confirm mode
    client.close()
