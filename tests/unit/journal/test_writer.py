"""The journal writer: dot-prefixed in-progress files, rotation (size, age, hour), counted drops, versions."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from broker.journal import files
from broker.journal.rows import RowBuffer, batch_of
from broker.journal.schema import (
    COLUMNS,
    CONSTANT_COLUMNS,
    DELIVERIES,
    EVENTS,
    JOURNAL_DROP,
    METADATA_KEY,
    ROUTE_CAPTURE,
    SCHEMA_VERSION,
    row_width,
)
from broker.journal.writer import JournalWriter

T0 = 1_700_000_000_000_000  # µs, 2023-11-14T22:13:20Z


def deliveries(*rows: tuple[Any, ...]) -> RowBuffer:
    return batch_of(DELIVERIES, rows)


def delivery_row(ts: int, seq: int) -> tuple[Any, ...]:
    """A deliveries row settled at ``ts`` µs; rows carry nanoseconds, files microseconds."""
    ns = ts * 1000
    return (ns, "ack", "/", seq, "ex", "rk", "q", 1, 16, ns - 500_000, ns - 100_000, False, None)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def published(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def hidden(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob(".*") if p.is_file())


def wait_written(writer: JournalWriter, rows: int) -> None:
    # The writer thread is asynchronous: poll its counter with a deadline (no fixed sleep).
    done = threading.Event()
    for _ in range(500):
        if writer.stats.rows_written >= rows:
            done.set()
            break
        done.wait(0.01)
    assert writer.stats.rows_written >= rows, "writer did not write in time"


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_file_is_dot_prefixed_until_complete_then_renamed(tmp_path: Path, fmt: str) -> None:
    writer = JournalWriter(tmp_path, "node-1", fmt=fmt, clock_us=Clock(), tick_s=0.01)
    writer.start()
    writer.submit(DELIVERIES, deliveries(delivery_row(T0, 1), delivery_row(T0 + 1, 2)))
    wait_written(writer, 2)
    assert published(tmp_path) == []
    [in_progress] = hidden(tmp_path)
    assert in_progress.name.endswith(f".{fmt}.inprogress")
    writer.close()
    assert hidden(tmp_path) == []
    [final] = published(tmp_path)
    assert final.parent.relative_to(tmp_path).as_posix() == "deliveries/date=2023-11-14/hour=22"
    assert final.name == f"node-1-{T0}-1.{fmt}"


def test_parquet_rows_carry_schema_version_node_and_utc_microsecond_timestamps(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="parquet", clock_us=Clock())
    writer.start()
    writer.submit(DELIVERIES, deliveries(delivery_row(T0, 7)))
    writer.close()
    table = pq.read_table(published(tmp_path)[0])
    assert table.schema.metadata[METADATA_KEY] == str(SCHEMA_VERSION).encode()
    assert str(table.schema.field("ts").type) == "timestamp[us, tz=UTC]"
    row = table.to_pylist()[0]
    assert (row["v"], row["node"], row["msg_seq"], row["outcome"]) == (SCHEMA_VERSION, "n", 7, "ack")
    assert int(row["ts"].timestamp() * 1_000_000) == T0


def test_jsonl_rows_are_flat_objects_with_integer_timestamps(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="jsonl", clock_us=Clock())
    writer.start()
    writer.submit(DELIVERIES, deliveries(delivery_row(T0, 7)))
    writer.close()
    [line] = published(tmp_path)[0].read_text().splitlines()
    row = json.loads(line)
    assert row["v"] == SCHEMA_VERSION
    assert (row["ts"], row["publish_ts"], row["queue"]) == (T0, T0 - 500, "q")


def test_rotates_when_a_file_reaches_the_size_limit(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="jsonl", rotate_bytes=1, clock_us=Clock())
    writer.start()
    for seq in range(3):
        writer.submit(DELIVERIES, deliveries(delivery_row(T0 + seq, seq)))
    writer.close()
    assert len(published(tmp_path)) == 3
    assert writer.stats.files_completed == 3


def test_rotates_by_age_even_without_new_rows(tmp_path: Path) -> None:
    clock = Clock()
    writer = JournalWriter(tmp_path, "n", fmt="jsonl", rotate_s=60, clock_us=clock, tick_s=0.01)
    writer.start()
    writer.submit(DELIVERIES, deliveries(delivery_row(T0, 1)))
    wait_written(writer, 1)
    clock.now += 61_000_000
    for _ in range(500):  # the writer's idle tick completes the old file
        if published(tmp_path):
            break
        threading.Event().wait(0.01)
    assert len(published(tmp_path)) == 1
    writer.close()


def test_rotates_when_the_hour_partition_changes(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="jsonl", clock_us=Clock())
    writer.start()
    writer.submit(DELIVERIES, deliveries(delivery_row(T0, 1)))
    writer.submit(DELIVERIES, deliveries(delivery_row(T0 + 3_600_000_000, 2)))
    writer.close()
    hours = [p.parent.name for p in published(tmp_path)]
    assert hours == ["hour=22", "hour=23"]


def test_batches_are_dropped_and_counted_when_the_writer_is_behind(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="jsonl", max_batches=2, clock_us=Clock())
    # Not started yet: nothing drains the queue, as when the thread is stuck on a slow disk.
    accepted = [writer.submit(DELIVERIES, deliveries(*[delivery_row(T0, i)] * 10)) for i in range(5)]
    assert accepted == [True, True, False, False, False]
    assert (writer.stats.batches_dropped, writer.stats.rows_dropped) == (3, 30)
    writer.start()
    writer.close()
    events = [json.loads(line) for p in published(tmp_path / EVENTS) for line in p.read_text().splitlines()]
    assert [(e["event"], e["count"], e["reason"]) for e in events] == [(JOURNAL_DROP, 30, "backpressure")]
    assert writer.stats.rows_written == 20 + 1


def test_submit_never_blocks_the_caller(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="jsonl", max_batches=1, clock_us=Clock())
    rows = deliveries(delivery_row(T0, 1))
    finished = threading.Event()

    def flood() -> None:
        for _ in range(1000):
            writer.submit(DELIVERIES, rows)
        finished.set()

    thread = threading.Thread(target=flood)
    thread.start()
    assert finished.wait(5.0)
    thread.join()
    assert writer.stats.batches_dropped == 999


def test_empty_files_are_not_published(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path, "n", fmt="parquet", clock_us=Clock())
    writer.start()
    writer.submit(DELIVERIES, deliveries())
    writer.close()
    assert published(tmp_path) == []
    assert hidden(tmp_path) == []


def test_default_format_is_parquet_when_pyarrow_is_installed() -> None:
    assert files.default_format() == "parquet"


def test_row_width_matches_the_columns_the_recorder_fills() -> None:
    assert row_width(EVENTS) == 17
    assert row_width(DELIVERIES) == len(delivery_row(T0, 1))


def read_back(root: Path, table: str, fmt: str) -> list[dict[str, Any]]:
    [path] = published(root / table)
    if fmt == "parquet":
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
        for row in rows:  # back to µs integers, as JSON Lines holds them
            for name, kind in COLUMNS[table]:
                if kind == "ts" and row[name] is not None:
                    row[name] = round(row[name].timestamp() * 1_000_000)
        return rows
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_every_column_kind_and_null_round_trips(tmp_path: Path, fmt: str) -> None:
    ns = T0 * 1000
    events: list[tuple[Any, ...]] = [
        (
            ns + 1_999,
            "deliver",
            "vh",
            7,
            "ex",
            "rk",
            "q",
            ns,
            None,
            16,
            None,
            None,
            3,
            True,
            None,
            None,
            None,
        ),
        (ns + 2_000, "queue_declared", "/", *(None,) * 13, '{"queue":"q"}'),
        (ns + 3_000, "ack", "vh", 8, "", "rk.ü", "q", ns, 2, 0, "conn", 1, None, False, "why", 5, None),
    ]
    captures: list[tuple[Any, ...]] = [
        (ns, "/", 1, "x", "k", "{}", ["q1", "q2"]),
        (ns, "/", 2, "x", "k", '{"n":[5,"int"]}', []),
    ]
    writer = JournalWriter(tmp_path, "n", fmt=fmt, clock_us=Clock())
    writer.start()
    writer.submit(EVENTS, batch_of(EVENTS, events))
    writer.submit(ROUTE_CAPTURE, batch_of(ROUTE_CAPTURE, captures))
    writer.close()
    for table, sent in ((EVENTS, events), (ROUTE_CAPTURE, captures)):
        names = [name for name, _ in COLUMNS[table][CONSTANT_COLUMNS:]]
        kinds = [kind for _, kind in COLUMNS[table][CONSTANT_COLUMNS:]]
        expected = [
            {
                "v": SCHEMA_VERSION,
                "node": "n",
                **{
                    name: value // 1000 if kind == "ts" and value is not None else value
                    for name, kind, value in zip(names, kinds, row, strict=True)
                },
            }
            for row in sent
        ]
        assert read_back(tmp_path, table, fmt) == expected
