"""State that used to live only in memory, through the real core into each store and back: the messages a
durable x-delayed-message exchange holds, quorum delivery counts, and the delivered marks a crash makes
untrustworthy (after one every recovered message is redelivered, as rabbit_queue_index does)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from broker.core.model.clock import ManualClock
from broker.core.queues.queue import Consumer, Queue
from broker.core.queues.queue_admin import add_consumer, basic_get
from broker.core.queues.queue_features import TimedEnvelope
from broker.core.topology.vhost import VirtualHost
from broker.session.fates import stored_delivery
from broker.storage.base import Store, message_key
from broker.storage.sqlite import DB_NAME, SqliteStore
from broker.storage.sqlite_schema import APPLICATION_ID, MIGRATIONS
from tests.unit.storage.helpers import abandon, make_message
from tests.unit.storage.test_recovery import Node

T0 = 1_700_000_000_000
DELAYED = {"x-delayed-type": "direct"}


def start(store: Store, now_ms: int) -> Node:
    node = Node(store, clock=ManualClock(start_ms=now_ms))
    node.recover()
    return node


def crash(node: Node) -> None:
    """kill -9: what was committed stays, nothing else runs (the SQLite file is simply left)."""
    node.settle()
    abandon(node.store)


def declare_delayed(vhost: VirtualHost, durable: bool = True) -> Queue:
    vhost.declare_exchange("later", "x-delayed-message", durable=durable, arguments=DELAYED)
    queue = vhost.declare_queue("due", object(), durable=True)
    vhost.bind_queue("due", "later", "k", None, object())
    return queue


def publish_delayed(node: Node, body: str, delay_ms: int, delivery_mode: int = 2) -> None:
    headers = {"x-delay": delay_ms}
    message = make_message("later", "k", body.encode(), headers=headers, delivery_mode=delivery_mode)
    writes = node.writer.writes
    queues, _ = node.broker.vhosts["/"].publish("later", message)
    assert queues == []  # held: routed nowhere yet
    assert node.writer.writes > writes  # a store write, so the publisher's confirm waits for its commit


def bodies(queue: Queue) -> list[str]:
    """basic.get with no_ack of everything ready (gone from the store too)."""
    out = []
    while (envelope := basic_get(queue)) is not None:
        if queue.store is not None and envelope.message.delivery_mode == 2:
            stored_delivery(queue, envelope, no_ack=True)
        out.append(envelope.message.body.decode())
    return out


@pytest.mark.parametrize("stop", ["clean", "crash"])
def test_held_messages_come_back_and_those_due_during_the_outage_go_at_start(reopen: Any, stop: str) -> None:
    first = start(reopen(), T0)
    declare_delayed(first.broker.vhosts["/"])
    publish_delayed(first, "soon", 2_000)
    publish_delayed(first, "transient-soon", 3_000, delivery_mode=1)  # the plugin stores any delivery_mode
    publish_delayed(first, "late", 60_000)
    first.settle()
    first.stop() if stop == "clean" else crash(first)

    second = start(reopen(), T0 + 10_000)  # down for 10 s: two came due meanwhile
    queue = second.broker.vhosts["/"].queues["due"]
    assert queue.message_count == 0  # not before the loop runs
    second.clock.advance(0)
    assert bodies(queue) == ["soon", "transient-soon"]
    second.settle()
    second.clock.advance(49)
    assert queue.message_count == 0
    second.clock.advance(1)
    assert bodies(queue) == ["late"]
    second.stop()

    third = Node(reopen(), clock=ManualClock(start_ms=T0 + 120_000))
    assert third.recover().delayed == 0  # routed messages left the store


def test_a_due_message_is_in_its_queue_or_still_held_never_both_nor_neither(reopen: Any) -> None:
    first = start(reopen(), T0)
    declare_delayed(first.broker.vhosts["/"])
    publish_delayed(first, "m", 1_000)
    first.settle()
    first.clock.advance(1)  # routed into the durable queue; the release and the enqueue share a batch
    crash(first)

    second = start(reopen(), T0 + 5_000)
    second.clock.advance(0)
    assert bodies(second.broker.vhosts["/"].queues["due"]) == ["m"]


@pytest.mark.parametrize("stop", ["clean", "crash"])
def test_after_a_crash_a_held_message_routed_again_goes_out_redelivered(reopen: Any, stop: str) -> None:
    """A due message is routed and may be delivered before the batch that releases it commits: after a crash
    it is still held and is routed again, so its copy is marked redelivered (a delivery may have left)."""
    first = start(reopen(), T0)
    declare_delayed(first.broker.vhosts["/"])
    publish_delayed(first, "m", 1_000)
    first.settle()
    first.clock.advance(1)  # routed into "due"; its batch (release and enqueue) not committed yet
    if stop == "clean":
        first.stop()
    else:
        abandon(first.store)  # kill -9 before the commit

    second = start(reopen(), T0 + 5_000)
    second.clock.advance(0)
    envelope = basic_get(second.broker.vhosts["/"].queues["due"])
    assert envelope is not None
    assert envelope.message.body == b"m"
    assert envelope.redelivered is (stop == "crash")


def test_a_transient_delayed_exchange_stores_nothing(reopen: Any) -> None:
    first = start(reopen(), T0)
    vhost = first.broker.vhosts["/"]
    vhost.declare_exchange("later", "x-delayed-message", durable=False, arguments=DELAYED)
    writes = first.writer.writes
    vhost.publish("later", make_message("later", "k", b"m", headers={"x-delay": 1000}, delivery_mode=2))
    assert first.writer.writes == writes
    first.stop()
    assert list(reopen().delayed_messages()) == []


@pytest.mark.parametrize("same_batch", [False, True], ids=["committed", "same-batch"])
def test_deleting_the_exchange_drops_what_it_held(reopen: Any, same_batch: bool) -> None:
    first = start(reopen(), T0)
    vhost = first.broker.vhosts["/"]
    declare_delayed(vhost)
    publish_delayed(first, "old", 5_000)
    if not same_batch:
        first.settle()
    vhost.delete_exchange("later")
    declare_delayed(vhost)  # declared again at once: only what it holds from now on is its own
    publish_delayed(first, "new", 5_000)
    first.stop()

    second = start(reopen(), T0 + 10_000)
    second.clock.advance(0)
    assert bodies(second.broker.vhosts["/"].queues["due"]) == ["new"]


def declare_quorum(node: Node, limit: int | None = None) -> Queue:
    arguments: dict[str, Any] = {"x-queue-type": "quorum"}
    if limit is not None:
        arguments["x-delivery-limit"] = limit
    vhost = node.broker.vhosts["/"]
    vhost.declare_queue("qq", object(), durable=True, arguments=arguments)
    vhost.declare_queue("dead", object(), durable=True)
    return vhost.queues["qq"]


def take(queue: Queue) -> TimedEnvelope:
    """basic.get with a manual ack to come (a quorum queue's envelopes carry their delivery count)."""
    envelope = basic_get(queue)
    assert envelope is not None
    stored_delivery(queue, envelope, no_ack=False)
    return envelope  # type: ignore[return-value]


def test_quorum_delivery_counts_survive_a_restart_and_a_crash(reopen: Any) -> None:
    first = start(reopen(), T0)
    queue = declare_quorum(first)
    first.publish("", "qq", "m", delivery_mode=2)
    for _ in range(2):
        queue.requeue([take(queue)])
        first.settle()
    first.stop()

    second = start(reopen(), T0)
    queue = second.broker.vhosts["/"].queues["qq"]
    envelope = take(queue)
    assert (envelope.delivery_count, envelope.redelivered) == (2, True)
    # (the x-delivery-count header is written by the session's header rewriter: the kill test sees it)
    queue.requeue([envelope])
    crash(second)

    third = start(reopen(), T0)
    envelope = take(third.broker.vhosts["/"].queues["qq"])
    assert envelope.delivery_count == 3


def test_a_message_checked_out_at_a_stop_counts_a_return_and_past_the_limit_is_dead_lettered(
    reopen: Any,
) -> None:
    first = start(reopen(), T0)
    queue = declare_quorum(first, limit=1)
    first.publish("", "qq", "poison", delivery_mode=2)
    first.publish("", "qq", "fine", delivery_mode=2)
    queue.requeue([take(queue)])  # poison: returned once, the limit
    first.settle()
    take(queue)  # poison again, unacked when the broker goes
    first.settle()
    crash(first)

    second = start(reopen(), T0)
    queue = second.broker.vhosts["/"].queues["qq"]
    # rabbit_fifo returns a gone consumer's messages with one more delivery: 2 > 1, so poison is dropped
    # (no dead-letter exchange here); fine was never delivered.
    assert bodies(queue) == ["fine"]


def test_quorum_redelivery_waits_for_its_count_to_commit(reopen: Any) -> None:
    first = start(reopen(), T0)
    queue = declare_quorum(first)
    first.publish("", "qq", "m", delivery_mode=2)
    first.settle()
    features = queue.features
    assert features is not None
    delivered: list[TimedEnvelope] = []

    class Channel:
        def can_deliver(self, consumer: Any) -> bool:
            return True

        def deliver(self, consumer: Any, queue: Queue, envelope: Any) -> None:
            delivered.append(envelope)

    add_consumer(queue, Consumer("c", queue, Channel(), False, False, 0))  # type: ignore[arg-type]
    first.loop.drain()
    assert len(delivered) == 1
    queue.requeue([delivered.pop()])
    assert features.dispatch(10) is False
    assert delivered == []  # the count is not committed yet
    first.settle()  # commits, and the commit wakes the queue, whose dispatch now runs
    first.loop.drain()
    assert [envelope.delivery_count for envelope in delivered] == [1]


@pytest.mark.parametrize("stop", ["clean", "crash"])
def test_after_a_crash_every_recovered_message_is_redelivered(reopen: Any, stop: str) -> None:
    first = start(reopen(), T0)
    vhost = first.broker.vhosts["/"]
    vhost.declare_queue("q", object(), durable=True)
    for body in ("delivered", "waiting"):
        first.publish("", "q", body, delivery_mode=2)
    take(vhost.queues["q"])
    first.settle()
    first.stop() if stop == "clean" else crash(first)

    second = start(reopen(), T0)
    queue = second.broker.vhosts["/"].queues["q"]
    flags = []
    while (envelope := basic_get(queue)) is not None:
        flags.append((envelope.message.body.decode(), envelope.redelivered))
    # rabbit_queue_index at a dirty recovery marks every message delivered (a delivery may have left before
    # its mark was written); a clean stop keeps the marks exact. Both checked against RabbitMQ 3.10.8.
    assert flags == [("delivered", True), ("waiting", stop == "crash")]


def test_a_schema_3_data_directory_migrates_and_its_first_start_counts_as_after_a_crash(
    tmp_path: Path,
) -> None:
    """Migration 4 adds the delivery counts, the delayed messages and the clean-stop mark to a store written
    before them; a store without the mark cannot prove its last stop was clean: its marks are not trusted."""
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        for step in MIGRATIONS[:3]:
            db.executescript(step)
        db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        db.execute("PRAGMA user_version=3")
        db.execute("INSERT INTO queues VALUES (1, '/', 'q', 0, NULL, 0)")
        db.execute("INSERT INTO messages VALUES (?, '', 'q', ?, ?, NULL, 0)", (message_key(1, 1), b"h", b"b"))
    store = SqliteStore(tmp_path)
    try:
        assert store.begin() is False
        assert list(store.messages(1)) == [(message_key(1, 1), "", "q", b"h", b"b", None, 0)]
        assert store.delivery_counts(1) == {}
        assert list(store.delayed_messages()) == []
    finally:
        store.close()
    again = SqliteStore(tmp_path)
    try:
        assert again.begin() is True  # closed cleanly this time
        assert again.begin() is False  # and this run has not stopped yet
    finally:
        again.close()
