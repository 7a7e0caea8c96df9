"""A broker with the journal on takes real pika traffic; ttd, fanout and replay run on Spark over its files
and their numbers match what the test sent."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pika
import pytest

from broker.analytics.cli import build_parser, run
from broker.analytics.jobs import fanout, replay, ttd
from tests.conftest import start_broker_process

pytestmark = pytest.mark.slow


def definitions(eu_binding: bool, plain_ae: bool) -> dict[str, Any]:
    """The topology the test declares (A), or the candidate with eu.# removed and an AE on plain (B)."""

    def ex(name: str, kind: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": name,
            "vhost": "/",
            "type": kind,
            "durable": False,
            "auto_delete": False,
            "internal": False,
            "arguments": args,
        }

    def bind(source: str, queue: str, key: str) -> dict[str, Any]:
        return {
            "source": source,
            "vhost": "/",
            "destination": queue,
            "destination_type": "queue",
            "routing_key": key,
            "arguments": {},
        }

    bindings = [bind("orders", "all", "#"), bind("orders.ae", "lost", "")]
    if eu_binding:
        bindings.append(bind("orders", "eu", "eu.#"))
    return {
        "vhosts": [{"name": "/"}],
        "exchanges": [
            ex("orders", "topic", {"alternate-exchange": "orders.ae"}),
            ex("orders.ae", "fanout", {}),
            ex("plain", "direct", {"alternate-exchange": "orders.ae"} if plain_ae else {}),
        ],
        "queues": [
            {"name": q, "vhost": "/", "durable": False, "auto_delete": False, "arguments": {}}
            for q in ("eu", "all", "lost")
        ],
        "bindings": bindings,
    }


def send_traffic(url: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.confirm_delivery()
    for queue in ("eu", "all", "lost"):
        channel.queue_declare(queue)
    channel.exchange_declare("orders.ae", "fanout")
    channel.exchange_declare("orders", "topic", arguments={"alternate-exchange": "orders.ae"})
    channel.exchange_declare("plain", "direct")
    channel.queue_bind("all", "orders", "#")
    channel.queue_bind("eu", "orders", "eu.#")
    channel.queue_bind("lost", "orders.ae", "")
    for i in range(20):
        channel.basic_publish("orders", "eu.order", b"x" * 10, pika.BasicProperties(headers={"i": i}))
    for _ in range(10):
        channel.basic_publish("orders", "us.order", b"y" * 10)
    for _ in range(5):
        try:
            channel.basic_publish("plain", "k", b"z", mandatory=True)
        except pika.exceptions.UnroutableError:
            pass
    for queue, count in (("eu", 20), ("all", 30)):
        for n in range(count):
            method, _props, _body = channel.basic_get(queue)
            assert method is not None
            if queue == "all" and n < 3:
                channel.basic_reject(method.delivery_tag, requeue=False)
            else:
                channel.basic_ack(method.delivery_tag)
    connection.close()


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("live-journal")
    broker = start_broker_process(
        "--journal-dir", str(root), "--journal-mode", "full", "--journal-capture-routing"
    )
    started = time.monotonic()
    try:
        send_traffic(broker.url)
    finally:
        assert broker.stop() == 0  # SIGTERM: the journal completes (renames) its files on the way out
    assert time.monotonic() - started < 60
    assert not list(root.rglob(".*")), "in-progress files left behind"
    return root


def test_fanout_counts_match_what_was_sent(spark: Any, journal: Path) -> None:
    _distribution, summary = fanout.compute(spark, str(journal))
    assert summary["messages"] == 35
    assert summary["distribution"] == {"2": 20, "1": 10, "0": 5}
    assert (summary["unroutable"], summary["returned"]) == (5, 5)
    assert (summary["nacked"], summary["dropped_by_reason"]) == (3, {"rejected": 3})


def test_ttd_counts_per_queue_and_sane_latencies(spark: Any, journal: Path) -> None:
    _windowed, overall, summary = ttd.compute(spark, str(journal), by="queue", exact=True)
    rows = {row["queue"]: row for row in overall.collect()}
    assert {queue: row["n"] for queue, row in rows.items()} == {"eu": 20, "all": 30}
    for row in rows.values():
        assert 0 <= row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"] < 60_000
    # "all" was drained after "eu", so its messages waited longer in the queue.
    assert rows["all"]["p50_ms"] > rows["eu"]["p50_ms"]
    assert summary["deliveries"] == 50


def test_replay_reports_the_messages_a_topology_change_would_reroute(
    spark: Any, journal: Path, tmp_path: Path
) -> None:
    defs_a, defs_b = tmp_path / "a.json", tmp_path / "b.json"
    defs_a.write_text(json.dumps(definitions(eu_binding=True, plain_ae=False)))
    defs_b.write_text(json.dumps(definitions(eu_binding=False, plain_ae=True)))
    diff, summary = replay.compute(spark, str(journal), str(defs_a), str(defs_b))
    assert summary["captured"] == 35
    assert summary["a_differs_from_live"] == 0  # topology A is what the broker really did
    assert (summary["changed"], summary["newly_routed"], summary["now_unroutable"]) == (20, 5, 0)
    removed = {tuple(row["removed"]) for row in diff.where("change = 'changed'").collect()}
    assert removed == {("eu",)}
    added = {tuple(row["added"]) for row in diff.where("change = 'newly_routed'").collect()}
    assert added == {("lost",)}


def test_cli_writes_outputs_and_the_report_renders_charts(spark: Any, journal: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    for job in ("ttd", "fanout", "throughput"):
        args = build_parser().parse_args([job, "--journal", str(journal), "--out", str(results / job)])
        run(args, spark)
    assert json.loads((results / "fanout" / "summary.json").read_text())["messages"] == 35
    assert (results / "ttd" / "summary.csv").read_text().startswith("exchange,")
    report = run(
        build_parser().parse_args(["report", "--results", str(results), "--out", str(tmp_path / "r")])
    )
    assert report["charts"] == ["ttd.png", "throughput.png", "fanout.png"]
    assert report["missing"] == ["replay"]
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3
