"""A broker with the journal on takes real pika traffic; ttd, fanout and replay run on Spark over its files
and their numbers match what the test sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from broker.analytics.cli import build_parser, run
from broker.analytics.jobs import fanout, replay, ttd

pytestmark = pytest.mark.slow


def test_fanout_counts_match_what_was_sent(spark: Any, live_journal: Path) -> None:
    _distribution, summary = fanout.compute(spark, str(live_journal))
    assert summary["messages"] == 35
    assert summary["distribution"] == {"2": 20, "1": 10, "0": 5}
    assert (summary["unroutable"], summary["returned"]) == (5, 5)
    assert (summary["nacked"], summary["dropped_by_reason"]) == (3, {"rejected": 3})


def test_ttd_counts_per_queue_and_sane_latencies(spark: Any, live_journal: Path) -> None:
    _windowed, overall, summary = ttd.compute(spark, str(live_journal), by="queue", exact=True)
    rows = {row["queue"]: row for row in overall.collect()}
    assert {queue: row["n"] for queue, row in rows.items()} == {"eu": 20, "all": 30}
    for row in rows.values():
        assert 0 <= row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"] < 60_000
    # "all" was drained after "eu", so its messages waited longer in the queue.
    assert rows["all"]["p50_ms"] > rows["eu"]["p50_ms"]
    assert summary["deliveries"] == 50


def test_replay_reports_the_messages_a_topology_change_would_reroute(
    spark: Any, live_journal: Path, live_definitions: tuple[Path, Path]
) -> None:
    defs_a, defs_b = live_definitions
    diff, summary = replay.compute(spark, str(live_journal), str(defs_a), str(defs_b))
    assert summary["captured"] == 35
    assert summary["a_differs_from_live"] == 0  # topology A is what the broker really did
    assert (summary["changed"], summary["newly_routed"], summary["now_unroutable"]) == (20, 5, 0)
    removed = {tuple(row["removed"]) for row in diff.where("change = 'changed'").collect()}
    assert removed == {("eu",)}
    added = {tuple(row["added"]) for row in diff.where("change = 'newly_routed'").collect()}
    assert added == {("lost",)}


def test_cli_writes_outputs_and_the_report_renders_charts(
    spark: Any, live_journal: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    for job in ("ttd", "fanout", "throughput"):
        args = build_parser().parse_args([job, "--journal", str(live_journal), "--out", str(results / job)])
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
