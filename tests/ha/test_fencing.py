"""Fencing: the active node paused (SIGSTOP) beyond its lease is deposed; once resumed it commits and
confirms nothing more, and closes its clients with 320 CONNECTION_FORCED."""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path

import asyncpg
import pika
import pika.exceptions
import pytest

from tests.ha.nodes import HANode

LEASE_S = 1.5


def _publish(channel: pika.adapters.blocking_connection.BlockingChannel, body: bytes) -> None:
    channel.basic_publish("", "orders", body, pika.BasicProperties(delivery_mode=2), mandatory=True)


@pytest.mark.slow
def test_a_paused_active_node_is_fenced_once_a_standby_took_over(postgres_dsn: str, tmp_path: Path) -> None:
    old, new = (HANode(name, postgres_dsn, tmp_path, LEASE_S) for name in ("old", "new"))
    try:
        old.start()
        old.wait_event("ready")
        new.start()
        new.wait_event("standby")
        connection = pika.BlockingConnection(old.parameters())
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("orders", durable=True)
        _publish(channel, b"before the pause")  # confirmed: committed with epoch 1

        old.signal(signal.SIGSTOP)
        ready = new.wait_event("ready", timeout_s=30)
        assert ready["epoch"] == 2
        successor = pika.BlockingConnection(new.parameters())
        successor_channel = successor.channel()
        successor_channel.confirm_delivery()
        _publish(successor_channel, b"on the new node")

        # A publish to the paused node sits in its socket; resumed, the node must neither store nor
        # confirm it, and closes the connection with 320.
        outcome: list[BaseException | None] = []

        def publish_to_the_old_node() -> None:
            try:
                _publish(channel, b"after the pause")
                outcome.append(None)
            except BaseException as error:  # the outcome is asserted below
                outcome.append(error)

        publisher = threading.Thread(target=publish_to_the_old_node)
        publisher.start()
        publisher.join(0.5)
        assert publisher.is_alive()  # no confirm from a paused process
        old.signal(signal.SIGCONT)
        publisher.join(30)
        assert len(outcome) == 1
        error = outcome[0]
        assert isinstance(error, pika.exceptions.ConnectionClosedByBroker), repr(error)
        assert error.reply_code == 320
        expected = "CONNECTION_FORCED - broker forced connection closure with reason 'deposed'"
        assert error.reply_text == expected
        assert old.wait() == 1  # deposed: exits for its supervisor to restart it as a standby
        assert "deposed" in old.log() or "lease_lost" in old.log()

        # The store holds what was confirmed, and nothing from the old node after the pause.
        bodies = []
        while True:
            method, _, body = successor_channel.basic_get("orders", auto_ack=True)
            if method is None:
                break
            bodies.append(body)
        assert bodies == [b"before the pause", b"on the new node"]
        successor.close()
    finally:
        old.stop()
        new.stop()


def _sql(dsn: str, statement: str) -> None:
    async def run() -> None:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(run())


def test_a_commit_after_a_successor_was_elected_is_refused_and_never_confirmed(
    postgres_dsn: str, tmp_path: Path
) -> None:
    # A 30 s lease: the node's next renewal (every 10 s) is far off, so the commit is what finds out.
    node = HANode("deposed", postgres_dsn, tmp_path, lease_s=30.0)
    try:
        node.start()
        node.wait_event("ready")
        connection = pika.BlockingConnection(node.parameters())
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("orders", durable=True)
        _publish(channel, b"confirmed")
        # What a successor's election does to the row (its lease then runs out for the check below).
        _sql(postgres_dsn, "UPDATE warrenmq_leader SET epoch = epoch + 1, holder = 'successor'")
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            _publish(channel, b"after the election")
        assert closed.value.reply_code == 320
        assert node.wait() == 1
        assert "a commit found a newer epoch" in node.log()
    finally:
        node.stop()
    _sql(postgres_dsn, "UPDATE warrenmq_leader SET lease_until = '-infinity'")
    successor = HANode("successor", postgres_dsn, tmp_path, lease_s=30.0)
    try:
        successor.start()
        assert successor.wait_event("ready")["epoch"] == 3
        connection = pika.BlockingConnection(successor.parameters())
        channel = connection.channel()
        assert channel.queue_declare("orders", passive=True).method.message_count == 1
        assert channel.basic_get("orders", auto_ack=True)[2] == b"confirmed"
        connection.close()
    finally:
        successor.stop()
