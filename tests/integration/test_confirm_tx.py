"""Publisher confirms and transactions (tx.select / commit / rollback) and the errors when mixing them."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pytest
from pamqp import commands

from .conftest import RawFactory
from .helpers import channel_error, new_queue, prepared, ready


def test_confirm_select_and_acks_carry_increasing_tags(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    client.send(commands.Confirm.Select(), 1)
    client.expect(commands.Confirm.SelectOk, channel=1)
    for i in range(5):
        client.publish(1, "", queue, f"m{i}".encode())
    confirmed: set[int] = set()
    highest = 0
    while highest < 5 or len(confirmed) < 5:
        ack = client.expect(commands.Basic.Ack, channel=1)
        assert ack.delivery_tag > highest  # acks arrive in order, each message confirmed once
        start = highest + 1 if ack.multiple else ack.delivery_tag
        confirmed.update(range(start, ack.delivery_tag + 1))
        highest = ack.delivery_tag
    assert confirmed == {1, 2, 3, 4, 5}


def test_unroutable_publish_is_still_acked(raw: RawFactory, unique: str) -> None:
    client = raw().opened()
    client.send(commands.Confirm.Select(), 1)
    client.expect(commands.Confirm.SelectOk, channel=1)
    client.publish(1, "amq.direct", f"{unique}-nowhere", b"x")
    ack = client.expect(commands.Basic.Ack, channel=1)
    assert ack.delivery_tag == 1


def test_confirm_select_twice_is_fine(raw: RawFactory) -> None:
    client = raw().opened()
    for _ in range(2):
        client.send(commands.Confirm.Select(), 1)
        client.expect(commands.Confirm.SelectOk, channel=1)


def test_confirm_select_nowait_gets_no_reply_but_acks(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Confirm.Select(nowait=True), 1)
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk, channel=1).queue  # no select-ok in between
    client.publish(1, "", queue, b"x")
    assert client.expect(commands.Basic.Ack, channel=1).delivery_tag == 1


def test_pika_blocking_confirms(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    queue = new_queue(ch)
    for i in range(10):
        ch.basic_publish("", queue, f"m{i}".encode())
    assert ready(ch, queue) == 10


def test_tx_then_confirm_is_406(channel: Any) -> None:
    channel.tx_select()
    assert channel_error(channel, "confirm_delivery") == (
        406,
        "PRECONDITION_FAILED - cannot switch from tx to confirm mode",
    )


def test_confirm_then_tx_is_406(channel: Any) -> None:
    channel.confirm_delivery()
    assert channel_error(channel, "tx_select") == (
        406,
        "PRECONDITION_FAILED - cannot switch from confirm to tx mode",
    )


@pytest.mark.parametrize("call", ["tx_commit", "tx_rollback"])
def test_commit_or_rollback_without_select_is_406(channel: Any, call: str) -> None:
    assert channel_error(channel, call) == (406, "PRECONDITION_FAILED - channel is not transactional")


def test_tx_select_twice_is_fine(channel: Any) -> None:
    channel.tx_select()
    channel.tx_select()
    assert channel.is_open


def test_tx_publishes_become_visible_on_commit(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    queue = new_queue(ch)
    observer = connection.channel()
    ch.tx_select()
    for i in range(3):
        ch.basic_publish("", queue, f"m{i}".encode())
    assert ready(observer, queue) == 0
    ch.tx_commit()
    assert ready(observer, queue) == 3
    # the channel stays transactional: the next batch also waits for a commit
    ch.basic_publish("", queue, b"m3")
    assert ready(observer, queue) == 3
    ch.tx_commit()
    assert ready(observer, queue) == 4


def test_tx_rollback_discards_publishes(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    queue = new_queue(ch)
    ch.tx_select()
    ch.basic_publish("", queue, b"discarded")
    ch.tx_rollback()
    ch.basic_publish("", queue, b"kept")
    ch.tx_commit()
    method, _props, body = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert body == b"kept"
    assert ready(ch, queue) == 0


def got_in_tx(connection: pika.BlockingConnection, count: int) -> tuple[Any, str, Any, list[int]]:
    """A queue holding m0..m{count-1} and a transactional channel that basic.got them all, unacked:
    (the publishing channel, the queue, the transactional channel, the delivery tags)."""
    ch, queue = prepared(connection, count)
    tx_ch = connection.channel()
    tx_ch.tx_select()
    tags = []
    for _ in range(count):
        method, _props, _body = tx_ch.basic_get(queue)
        assert method is not None
        tags.append(method.delivery_tag)
    return ch, queue, tx_ch, tags


def test_tx_acks_take_effect_on_commit(connection: pika.BlockingConnection) -> None:
    ch, queue, tx_ch, tags = got_in_tx(connection, 2)
    tx_ch.basic_ack(tags[0])
    tx_ch.tx_commit()
    tx_ch.close()  # the uncommitted-ack message m1 was never acked: requeued
    method, _props, body = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert (body, method.redelivered) == (b"m1", True)
    assert ready(ch, queue) == 0


def test_tx_rollback_forgets_acks_but_keeps_messages_unacked(connection: pika.BlockingConnection) -> None:
    ch, queue, tx_ch, [tag] = got_in_tx(connection, 1)
    tx_ch.basic_ack(tag)
    tx_ch.tx_rollback()
    assert ready(ch, queue) == 0  # rollback does not requeue: the message is still unacked
    tx_ch.basic_ack(tag)  # the tag is still valid
    tx_ch.tx_commit()
    tx_ch.close()
    assert ready(ch, queue) == 0


def test_tx_reject_requeue_takes_effect_on_commit(connection: pika.BlockingConnection) -> None:
    ch, queue, tx_ch, [tag] = got_in_tx(connection, 1)
    tx_ch.basic_reject(tag, requeue=True)
    assert ready(ch, queue) == 0
    tx_ch.tx_commit()
    assert ready(ch, queue) == 1


def test_tx_mandatory_return_comes_before_commit_ok(raw: RawFactory, unique: str) -> None:
    client = raw().opened()
    client.send(commands.Tx.Select(), 1)
    client.expect(commands.Tx.SelectOk, channel=1)
    client.publish(1, "amq.direct", f"{unique}-nowhere", b"lost", mandatory=True)
    client.send(commands.Tx.Commit(), 1)
    ret = client.expect(commands.Basic.Return, channel=1)
    assert (ret.reply_code, ret.reply_text) == (312, "NO_ROUTE")
    client.recv_method()  # content header
    assert client.recv_method()[1].value == b"lost"
    client.expect(commands.Tx.CommitOk, channel=1)


def test_tx_publish_to_missing_exchange_fails_at_once(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch = connection.channel()
    ch.tx_select()
    ch.basic_publish(f"{unique}-missing", "rk", b"x")
    assert channel_error(ch, "tx_commit") == (404, f"NOT_FOUND - no exchange '{unique}-missing' in vhost '/'")
