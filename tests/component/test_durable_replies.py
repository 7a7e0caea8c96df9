"""Exchange and queue methods that change the store answer after its commit, as RabbitMQ answers after its
Mnesia transaction; those that change nothing durable answer at once (broker.session.durable_replies)."""

from __future__ import annotations

from typing import Any

import pytest
from pamqp import commands, frame, header
from pamqp.body import ContentBody

from broker.core.broker import Broker
from broker.storage.memory import MemoryStore
from broker.storage.writer import StoreWriter
from tests.component.harness import Client
from tests.unit.core.fakes import ManualLoop


def _client() -> tuple[Client, MemoryStore]:
    loop = ManualLoop()
    store = MemoryStore()
    writer = StoreWriter(store, loop.call_soon, loop.call_soon, lambda error: None)
    client = Client(Broker(loop.call_soon, persistence=writer), loop=loop)
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Exchange.Declare(exchange="dx", exchange_type="direct", durable=True))
    client.send(1, commands.Queue.Declare(queue="dq", durable=True))
    client.received()
    return client, store


def _read(client: Client, method: Any) -> list[Any]:
    """``method`` as one read, without running the loop: what the broker wrote before its commit."""
    client.session.data_received(frame.marshal(method, 1))
    return [value for _, value in client.received()]


@pytest.mark.parametrize(
    "method",
    [
        commands.Queue.Declare(queue="q-new", durable=True),
        commands.Exchange.Declare(exchange="x-new", exchange_type="fanout", durable=True),
        commands.Queue.Bind(queue="dq", exchange="dx", routing_key="k"),
        commands.Exchange.Bind(destination="dx", source="amq.direct", routing_key="k"),
        commands.Queue.Delete(queue="dq"),
        commands.Exchange.Delete(exchange="dx"),
    ],
    ids=[
        "queue.declare",
        "exchange.declare",
        "queue.bind",
        "exchange.bind",
        "queue.delete",
        "exchange.delete",
    ],
)
def test_a_durable_change_is_answered_once_committed(method: Any) -> None:
    client, store = _client()
    commits = store.commits
    assert _read(client, method) == []  # the reply waits for the batch holding the change
    client.loop.run()  # end of the loop turn: the batch commits, then the reply goes out
    assert store.commits == commits + 1
    replies = [value for _, value in client.received()]
    assert len(replies) == 1
    assert replies[0].name.endswith("Ok")


@pytest.mark.parametrize(
    "method",
    [
        commands.Queue.Declare(queue="q-transient"),
        commands.Queue.Declare(queue="dq", passive=True),
        commands.Exchange.Declare(exchange="x-transient", exchange_type="topic"),
    ],
    ids=["transient queue", "passive", "transient exchange"],
)
def test_a_change_the_store_never_sees_is_answered_at_once(method: Any) -> None:
    client, _ = _client()
    replies = _read(client, method)
    assert len(replies) == 1
    assert replies[0].name.endswith("Ok")


def test_an_error_after_a_durable_change_keeps_the_order() -> None:
    """A durable declare then a failing one in the same read: the channel.close follows the declare-ok,
    both after the commit."""
    client, _ = _client()
    data = frame.marshal(commands.Queue.Declare(queue="q2", durable=True), 1) + frame.marshal(
        commands.Queue.Declare(queue="q2", durable=False), 1
    )
    client.session.data_received(data)
    assert client.received() == []
    client.loop.run()
    names = [value.name for _, value in client.received()]
    assert names == ["Queue.DeclareOk", "Channel.Close"]


def test_tx_commit_ok_waits_for_the_commit_of_its_persistent_messages() -> None:
    client, store = _client()
    client.send(1, commands.Queue.Bind(queue="dq", exchange="dx", routing_key="k"))
    client.send(1, commands.Tx.Select())
    client.feed(
        frame.marshal(commands.Basic.Publish(exchange="dx", routing_key="k"), 1)
        + frame.marshal(header.ContentHeader(0, 1, commands.Basic.Properties(delivery_mode=2)), 1)
        + frame.marshal(ContentBody(b"x"), 1)
    )
    client.received()
    commits = store.commits
    assert _read(client, commands.Tx.Commit()) == []
    client.loop.run()
    assert store.commits == commits + 1
    assert [value.name for _, value in client.received()] == ["Tx.CommitOk"]
