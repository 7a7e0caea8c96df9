"""The Spark jobs on small hand-made journals whose answers are known, and their errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from broker.analytics import schema as analytics_schema
from broker.analytics.errors import AnalyticsError
from broker.analytics.jobs import fanout, throughput, ttd
from broker.journal import schema as journal_schema
from broker.journal.rows import RowBuffer, batch_of
from broker.journal.writer import JournalWriter

pytestmark = pytest.mark.slow

T0 = 1_700_000_000_000_000  # 2023-11-14T22:13:20Z, on a 10 s window boundary
MS = 1000


def batch(table: str, rows: list[tuple[Any, ...]]) -> RowBuffer:
    """A writer batch of ``rows`` given with µs timestamps (batches carry ns, files µs)."""
    kinds = [kind for _, kind in journal_schema.COLUMNS[table][journal_schema.CONSTANT_COLUMNS :]]
    scaled = [
        tuple(v * 1000 if kind == "ts" and v is not None else v for kind, v in zip(kinds, row, strict=True))
        for row in rows
    ]
    return batch_of(table, scaled)


def compact_journal(root: Path, fmt: str = "parquet") -> None:
    """100 deliveries via exchange a → qa with TTD 1..100 ms, 10 via b → qb with TTD 1000 ms (20 s later),
    5 unroutable and 2 returned publishes, 3 expired messages."""
    rows: list[tuple[Any, ...]] = []
    for i in range(1, 101):
        publish = T0 + i * MS
        rows.append(
            (
                publish + i * MS + 50,
                "ack",
                "/",
                i,
                "a",
                "k",
                "qa",
                1,
                10,
                publish,
                publish + i * MS,
                False,
                None,
            )
        )
    for i in range(10):
        publish = T0 + 20_000 * MS + i
        rows.append(
            (
                publish + 1001 * MS,
                "ack",
                "/",
                200 + i,
                "b",
                "k",
                "qb",
                1,
                10,
                publish,
                publish + 1000 * MS,
                False,
                None,
            )
        )
    for i in range(5):
        rows.append((T0 + i, "unroutable", "/", 300 + i, "a", "x", None, 0, 10, T0 + i, None, None, None))
    for i in range(2):
        rows.append((T0 + i, "returned", "/", 400 + i, "a", "x", None, 0, 10, T0 + i, None, None, None))
    for i in range(3):
        rows.append((T0 + i, "expire", "/", 500 + i, "a", "k", "qa", 1, 10, T0 + i, None, None, None))
    writer = JournalWriter(root, "n1", fmt=fmt, clock_us=lambda: T0)
    writer.start()
    writer.submit(
        journal_schema.DELIVERIES, batch(journal_schema.DELIVERIES, sorted(rows, key=lambda row: row[0]))
    )
    writer.close()


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("journal")
    compact_journal(root)
    return str(root)


def test_analytics_schema_mirrors_the_journal_schema() -> None:
    assert analytics_schema.SCHEMA_VERSION == journal_schema.SCHEMA_VERSION
    assert analytics_schema.COLUMNS == journal_schema.COLUMNS


def test_ttd_exact_percentiles_and_counts_per_window_and_exchange(spark: Any, journal: str) -> None:
    windowed, overall, summary = ttd.compute(spark, journal, window="10s", by="exchange", exact=True)
    rows = {row["exchange"]: row.asDict() for row in overall.collect()}
    assert (rows["a"]["n"], rows["b"]["n"]) == (100, 10)
    assert (rows["a"]["p50_ms"], rows["a"]["max_ms"]) == (50.5, 100.0)
    assert rows["b"]["p50_ms"] == rows["b"]["max_ms"] == 1000.0
    assert summary["deliveries"] == 110
    # a's deliveries fall in the first two 10 s windows (T0+2 ms … T0+200 ms), b's 20 s later.
    per_window = [(r["exchange"], r["n"]) for r in windowed.collect()]
    assert per_window == [("a", 100), ("b", 10)]


def test_ttd_by_queue_and_approximate_percentiles_are_ordered(spark: Any, journal: str) -> None:
    _windowed, overall, _ = ttd.compute(spark, journal, by="exchange,queue")
    for row in overall.collect():
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"]


def test_fanout_counts_unroutable_returned_and_expired(spark: Any, journal: str) -> None:
    _distribution, summary = fanout.compute(spark, journal)
    assert summary["messages"] == 120
    assert (summary["unroutable"], summary["returned"], summary["expired"]) == (7, 2, 3)
    assert summary["distribution"] == {"0": 7, "1": 113}


def test_throughput_totals(spark: Any, journal: str) -> None:
    _data, summary = throughput.compute(spark, journal, window="10s")
    assert summary["totals"] == {
        "published": 120,
        "routed": 113,
        "unroutable": 7,
        "delivered": 110,
        "acked": 110,
    }


def test_jsonl_journal_gives_the_same_answers(spark: Any, tmp_path: Path) -> None:
    compact_journal(tmp_path, fmt="jsonl")
    _w, overall, _ = ttd.compute(spark, str(tmp_path), exact=True)
    assert {row["exchange"]: row["p50_ms"] for row in overall.collect()} == {"a": 50.5, "b": 1000.0}


def test_missing_path_is_a_clear_error(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(AnalyticsError, match="journal path does not exist"):
        ttd.compute(spark, str(tmp_path / "nope"))


def test_empty_journal_is_a_clear_error(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / ".half-written.parquet.inprogress").write_bytes(b"PAR1")
    with pytest.raises(AnalyticsError, match="no journal files under"):
        ttd.compute(spark, str(tmp_path))


def test_schema_version_mismatch_is_refused(spark: Any, tmp_path: Path) -> None:
    compact_journal(tmp_path, fmt="jsonl")
    future = tmp_path / "deliveries" / "date=2023-11-14" / "hour=22" / "n2-1-1.jsonl"
    future.write_text(json.dumps({"v": 2, "node": "n2", "ts": T0, "outcome": "ack"}) + "\n")
    with pytest.raises(AnalyticsError, match=r"schema version mismatch .* version\(s\) \[1, 2\]"):
        ttd.compute(spark, str(tmp_path))


def test_journal_without_deliveries_is_a_clear_error_for_ttd(spark: Any, tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="parquet", clock_us=lambda: T0)
    writer.start()
    writer.submit(
        journal_schema.EVENTS,
        batch(journal_schema.EVENTS, [(T0, "queue_declared", "/", *(None,) * 13, "{}")]),
    )
    writer.close()
    with pytest.raises(AnalyticsError, match="has no deliveries"):
        ttd.compute(spark, str(tmp_path))
