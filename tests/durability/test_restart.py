"""What survives a restart, with real clients against `warrenmq serve --data-dir` (RabbitMQ's durability
contract, the durability promises in docs/architecture.md):
durable entities and persistent messages on durable queues; nothing transient.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.conftest import run_broker_cli
from tests.durability.conftest import DurableBroker
from tests.integration.helpers import channel_error, drain_redelivered

PERSISTENT = pika.BasicProperties(delivery_mode=2)
TRANSIENT = pika.BasicProperties(delivery_mode=1)


def _confirmed_channel(durable: DurableBroker) -> BlockingChannel:
    channel = durable.connect().channel()
    channel.confirm_delivery()
    return channel


def test_the_ready_line_names_the_store_without_its_password(durable: DurableBroker) -> None:
    assert durable.process is not None
    named = durable.process.ready["store"]
    if durable.store is None:
        assert named == f"sqlite:{durable.data_dir}"
    else:
        parts = urlsplit(durable.store)
        assert isinstance(named, str)
        assert named.startswith("postgresql://")
        assert named.endswith(f"@{parts.hostname}:{parts.port}{parts.path}") or named.endswith(
            f"//{parts.hostname}:{parts.port}{parts.path}"
        )
        assert f":{parts.password}@" not in named


@pytest.mark.parametrize("crash", [False, True], ids=["sigterm", "sigkill"])
def test_durable_queue_keeps_confirmed_persistent_messages_and_transient_ones_vanish(
    durable: DurableBroker, crash: bool
) -> None:
    channel = _confirmed_channel(durable)
    channel.queue_declare("orders", durable=True)
    channel.queue_declare("scratch", durable=False)
    for index in range(20):
        properties = PERSISTENT if index % 2 == 0 else TRANSIENT
        channel.basic_publish("", "orders", f"o{index}".encode(), properties)
        channel.basic_publish("", "scratch", f"s{index}".encode(), PERSISTENT)

    durable.restart(crash=crash)

    channel = durable.connect().channel()
    # After a crash every recovered message comes back redelivered, as RabbitMQ 3.10.8's classic queues do
    # (rabbit_queue_index marks them all delivered at a dirty recovery; checked against it).
    assert drain_redelivered(channel, "orders") == [
        (f"o{index}".encode(), crash) for index in range(0, 20, 2)
    ]
    assert channel_error(channel, "queue_declare", "scratch", passive=True)[0] == 404
    assert durable.recovered["messages"] == 10


def test_bindings_between_durable_ends_route_after_restart(durable: DurableBroker) -> None:
    channel = _confirmed_channel(durable)
    channel.exchange_declare("events", "topic", durable=True)
    channel.exchange_declare("fan", "fanout", durable=True)
    channel.exchange_declare("scratch-ex", "fanout", durable=False)
    channel.queue_declare("audit", durable=True)
    channel.queue_declare("billing", durable=True)
    channel.queue_declare("temp", durable=False)
    channel.queue_bind("billing", "events", "invoice.#", arguments={"x-note": 7})
    channel.exchange_bind("fan", "events", "#")  # E2E: events -> fan
    channel.queue_bind("audit", "fan")
    channel.queue_bind("temp", "events", "#")  # to a transient queue: not durable
    channel.exchange_bind("scratch-ex", "events", "#")  # to a transient exchange: not durable

    durable.restart()

    channel = _confirmed_channel(durable)
    channel.basic_publish("events", "invoice.paid", b"i1", PERSISTENT)
    channel.basic_publish("events", "user.created", b"u1", PERSISTENT)
    assert [body for body, _ in drain_redelivered(channel, "billing")] == [b"i1"]
    assert [body for body, _ in drain_redelivered(channel, "audit")] == [b"i1", b"u1"]
    assert channel_error(channel, "queue_declare", "temp", passive=True)[0] == 404
    channel = durable.connect().channel()
    assert channel_error(channel, "exchange_declare", "scratch-ex", passive=True)[0] == 404
    channel = durable.connect().channel()
    # Arguments came back typed: a redeclare must be equivalent, and the binding is the same one.
    channel.queue_unbind("billing", "events", "invoice.#", arguments={"x-note": 7})
    channel.basic_publish("events", "invoice.paid", b"i2")
    assert drain_redelivered(channel, "billing") == []
    assert durable.recovered == {
        "vhosts": 1,
        "exchanges": 2,
        "queues": 2,
        "bindings": 3,
        "messages": 0,
        "redelivered": 0,
        "delayed": 0,
        "skipped": 0,
        "auto_deleted": 0,
    }


def test_exclusive_and_auto_delete_queues_are_gone_after_restart(durable: DurableBroker) -> None:
    connection = durable.connect()
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("mine", durable=True, exclusive=True)
    channel.queue_declare("short-lived", auto_delete=True)
    # Durable auto-delete queues, as RabbitMQ 3.10.8 treats them after a crash (checked against it): one whose
    # consumer died with the broker is deleted; one that never had a consumer is recovered with its messages.
    channel.queue_declare("consumed", durable=True, auto_delete=True)
    channel.queue_declare("unconsumed", durable=True, auto_delete=True)
    channel.exchange_declare("route", "direct", durable=True)
    channel.queue_bind("consumed", "route", "k")
    channel.basic_publish("", "mine", b"x", PERSISTENT)
    channel.basic_publish("", "unconsumed", b"kept", PERSISTENT)
    listener = durable.connect().channel()
    listener.basic_consume("consumed", lambda *args: None)
    channel.basic_publish("", "unconsumed", b"sentinel", PERSISTENT)  # confirmed: the consumer mark is stored

    durable.restart(crash=True)

    channel = durable.connect().channel()
    for name in ("mine", "short-lived", "consumed"):
        assert channel_error(channel, "queue_declare", name, passive=True)[0] == 404
        channel = durable.connect().channel()
    assert [body for body, _ in drain_redelivered(channel, "unconsumed")] == [b"kept", b"sentinel"]
    assert durable.recovered["auto_deleted"] == 1
    assert durable.recovered["skipped"] == 0  # the binding to "consumed" went with it, not left dangling

    durable.restart()  # and it stays deleted
    assert durable.recovered["queues"] == 1


def test_queue_arguments_survive_and_redeclare_checks_them(durable: DurableBroker) -> None:
    channel = durable.connect().channel()
    channel.queue_declare("limited", durable=True, arguments={"x-max-length": 2, "x-overflow": "drop-head"})

    durable.restart()

    channel = _confirmed_channel(durable)
    channel.queue_declare("limited", durable=True, arguments={"x-max-length": 2, "x-overflow": "drop-head"})
    for index in range(4):
        channel.basic_publish("", "limited", f"m{index}".encode(), PERSISTENT)
    assert [body for body, _ in drain_redelivered(channel, "limited")] == [b"m2", b"m3"]
    code, text = channel_error(
        channel, "queue_declare", "limited", durable=True, arguments={"x-max-length": 3}
    )
    assert code == 406
    assert "x-max-length" in text


@pytest.mark.parametrize("crash", [False, True], ids=["sigterm", "sigkill"])
def test_unacked_deliveries_come_back_redelivered_and_acked_ones_do_not(
    durable: DurableBroker, crash: bool
) -> None:
    channel = _confirmed_channel(durable)
    channel.queue_declare("work", durable=True)
    for index in range(6):
        channel.basic_publish("", "work", f"w{index}".encode(), PERSISTENT)
    consumer = durable.connect().channel()
    tags = []
    for _ in range(4):
        method, _, _ = consumer.basic_get("work")
        assert method is not None
        tags.append(method.delivery_tag)
    consumer.basic_ack(tags[0])  # w0 acked, w1..w3 delivered and unacked, w4..w5 never delivered
    # Batches commit in order: once a later publish is confirmed, the ack and the delivery marks before it
    # are on disk too.
    channel.basic_publish("", "work", b"sentinel", PERSISTENT)

    durable.restart(crash=crash)

    channel = durable.connect().channel()
    # A clean stop keeps the delivered marks exact; after a crash every message is redelivered, as RabbitMQ
    # 3.10.8's queue index marks them at a dirty recovery (both checked against it).
    assert drain_redelivered(channel, "work") == [
        (b"w1", True),
        (b"w2", True),
        (b"w3", True),
        (b"w4", crash),
        (b"w5", crash),
        (b"sentinel", crash),
    ]


def test_committed_transaction_survives_a_crash(durable: DurableBroker) -> None:
    channel = durable.connect().channel()
    channel.queue_declare("ledger", durable=True)
    channel.tx_select()
    channel.basic_publish("", "ledger", b"debit", PERSISTENT)
    channel.basic_publish("", "ledger", b"credit", PERSISTENT)
    channel.tx_commit()  # commit-ok comes only after the store committed
    channel.basic_publish("", "ledger", b"uncommitted", PERSISTENT)

    durable.restart(crash=True)

    channel = durable.connect().channel()
    assert [body for body, _ in drain_redelivered(channel, "ledger")] == [b"debit", b"credit"]


def test_rejected_message_moves_to_the_dead_letter_queue_across_a_crash(durable: DurableBroker) -> None:
    channel = _confirmed_channel(durable)
    channel.exchange_declare("dlx", "fanout", durable=True)
    channel.queue_declare("dead", durable=True)
    channel.queue_bind("dead", "dlx")
    channel.queue_declare("inbox", durable=True, arguments={"x-dead-letter-exchange": "dlx"})
    channel.basic_publish("", "inbox", b"poison", PERSISTENT)
    method, _, _ = channel.basic_get("inbox")
    assert method is not None
    channel.basic_reject(method.delivery_tag, requeue=False)
    channel.basic_publish("", "inbox", b"sentinel", PERSISTENT)

    durable.restart(crash=True)

    channel = durable.connect().channel()
    assert [body for body, _ in drain_redelivered(channel, "inbox")] == [b"sentinel"]
    method, properties, body = channel.basic_get("dead", auto_ack=True)
    assert body == b"poison"
    assert properties.headers["x-death"][0]["reason"] == "rejected"


def test_purge_and_delete_are_durable(durable: DurableBroker) -> None:
    channel = _confirmed_channel(durable)
    channel.queue_declare("purged", durable=True)
    channel.queue_declare("deleted", durable=True)
    for queue in ("purged", "deleted"):
        channel.basic_publish("", queue, b"x", PERSISTENT)
    channel.queue_purge("purged")
    channel.queue_delete("deleted")

    durable.restart()

    channel = durable.connect().channel()
    assert channel.queue_declare("purged", passive=True).method.message_count == 0
    assert channel_error(channel, "queue_declare", "deleted", passive=True)[0] == 404


def test_vhosts_and_their_entities_survive_and_deleting_a_vhost_is_durable(durable: DurableBroker) -> None:
    assert durable.process is not None
    durable.stop()
    process = durable.start("--vhost", "/", "--vhost", "tenant")
    tenant = pika.BlockingConnection(pika.URLParameters(process.url + "tenant")).channel()
    tenant.confirm_delivery()
    tenant.queue_declare("jobs", durable=True)
    tenant.basic_publish("", "jobs", b"j", PERSISTENT)

    durable.restart()  # without --vhost tenant: the stored vhost comes back by itself

    assert durable.process is not None
    tenant = pika.BlockingConnection(pika.URLParameters(durable.process.url + "tenant")).channel()
    assert [body for body, _ in drain_redelivered(tenant, "jobs")] == [b"j"]
    assert durable.recovered["vhosts"] == 2


def test_message_ttl_deadlines_are_kept_across_a_restart(durable: DurableBroker) -> None:
    channel = _confirmed_channel(durable)
    channel.queue_declare("fresh", durable=True, arguments={"x-message-ttl": 600_000})
    channel.queue_declare("stale", durable=True)
    channel.basic_publish("", "fresh", b"keep", PERSISTENT)
    channel.basic_publish("", "stale", b"gone", pika.BasicProperties(delivery_mode=2, expiration="300"))
    confirmed = time.monotonic()

    durable.stop()
    # The 300 ms run out while the broker is down (a TTL on the broker's clock, nothing to poll for): a
    # restart alone can take less than that now that a clean stop does not wait out its grace.
    time.sleep(max(0.0, confirmed + 0.5 - time.monotonic()))
    durable.start()

    channel = durable.connect().channel()
    assert [body for body, _ in drain_redelivered(channel, "fresh")] == [b"keep"]
    # Its deadline passed during the restart: expired.
    assert drain_redelivered(channel, "stale") == []


def test_a_corrupt_store_is_refused_with_the_file_named(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "warrenmq.db").write_bytes(b"this is not a database, it is a grocery list" * 100)
    result = subprocess.run(
        [sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert str(data_dir / "warrenmq.db") in result.stderr
    assert (data_dir / "warrenmq.db").read_bytes().startswith(b"this is not a database")


def test_a_second_broker_on_the_same_data_directory_is_refused(durable: DurableBroker) -> None:
    if durable.store is not None:
        pytest.skip("SQLite's data directory lock; on PostgreSQL a second node waits as a standby (tests/ha)")
    result = run_broker_cli("serve", "--port", "0", "--data-dir", str(durable.data_dir), timeout_s=30)
    assert result.returncode == 1
    assert "in use by another broker" in result.stderr
    assert durable.process is not None
    assert durable.process.process.poll() is None
    durable.process.process.send_signal(signal.SIGCONT)  # still serving
