"""`warrenmq bench` runs every scenario against a live broker, small, and reports sane figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker.bench import scenarios
from broker.bench.client import BenchError, Connection
from tests.conftest import run_broker_cli


@pytest.mark.slow
def test_every_scenario_runs_and_writes_json(amqp_url: str, tmp_path: Path) -> None:
    out = tmp_path / "bench.jsonl"
    names = ["pub16", "pubsub", "ack1", "ack50", "fanout", "topic", "confirm1", "conns"]
    result = run_broker_cli(
        "bench", "--url", amqp_url, "--scale", "0.01", "--json", str(out), *names, timeout_s=300
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["name"] for row in rows] == names
    assert all(row["rate"] > 0 for row in rows)
    fanout = next(row for row in rows if row["name"] == "fanout")
    assert fanout["deliveries_per_s"] == pytest.approx(fanout["rate"] * 10)
    assert next(row for row in rows if row["name"] == "topic")["extra"]["exact_counts"] is True


def test_topic_reference_matcher_follows_rabbitmq_wildcards() -> None:
    match = scenarios._topic_matches
    assert match("a.*.c", "a.b.c")
    assert not match("a.*.c", "a.c")
    assert match("a.#.c", "a.c")
    assert match("a.#.c", "a.b.b.c")
    assert match("#", "a.b")
    assert not match("a.*", "a.b.c")


def test_unknown_scenario_is_exit_2(amqp_url: str) -> None:
    result = run_broker_cli("bench", "--url", amqp_url, "nope", timeout_s=60)
    assert result.returncode == 2
    assert "unknown scenario" in result.stderr


def test_non_amqp_urls_are_refused() -> None:
    with pytest.raises(BenchError):
        Connection("http://127.0.0.1:1/")


def test_decode_scenario_shows_linear_scaling_from_1_kb_to_1_mb(tmp_path: Path) -> None:
    # The decode benchmark of `warrenmq bench`. The per-KB cost at 1 MB over that at 1 KB stays
    # near 1 for every shape (CPU time, best of several runs); a quadratic decoder's would be ~1000.
    out = tmp_path / "decode.jsonl"
    result = run_broker_cli("bench", "--json", str(out), "decode", timeout_s=300)
    assert result.returncode == 0, result.stderr
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    extra = row["extra"]
    assert {f"{shape}_1024KB_us" for shape in ("many_small", "void_array", "few_large")} <= set(extra)
    for shape in ("many_small", "void_array", "few_large"):
        assert extra[f"{shape}_scaling"] < 5, (shape, extra)


@pytest.mark.slow
def test_plane_cost_runs_both_sides_of_this_build_and_prints_the_table(tmp_path: Path) -> None:
    out = tmp_path / "planes.jsonl"
    result = run_broker_cli(
        "bench",
        "--plane-cost",
        "--rounds",
        "1",
        "--scale",
        "0.01",
        "--json",
        str(out),
        "pubsub",
        timeout_s=300,
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(row["planes"] for row in rows) == ["off", "on"]
    assert all(row["rate"] > 0 for row in rows)
    assert "| pubsub |" in result.stdout
