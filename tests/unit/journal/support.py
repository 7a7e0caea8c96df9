"""Shared pieces of the journal tests: a sink that keeps what the recorder hands over, a stepping clock."""

from __future__ import annotations

import os
from typing import Any

import pytest

from broker.journal.rows import RowBuffer
from broker.journal.schema import COLUMNS, CONSTANT_COLUMNS


class Sink:
    """Keeps every submitted batch: ``batches`` as handed over, ``rows`` as dicts per table."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[tuple[Any, ...]]]] = []

    def submit(self, table: str, batch: RowBuffer) -> bool:
        assert batch.table == table
        self.batches.append((table, list(batch.tuples())))
        return True

    def tuples(self, table: str) -> list[tuple[Any, ...]]:
        return [row for name, rows in self.batches if name == table for row in rows]

    @property
    def rows(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for table, _ in COLUMNS.items():
            names = [name for name, _ in COLUMNS[table][CONSTANT_COLUMNS:]]
            found = [dict(zip(names, row, strict=True)) for row in self.tuples(table)]
            if found:
                out[table] = found
        return out


class Ticks:
    """A clock in nanoseconds that moves 10 µs at every reading, so rows taken apart in time differ."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000_000_000

    def __call__(self) -> int:
        self.now += 10_000
        return self.now


NATIVE_DISABLED = os.environ.get("WARRENMQ_JOURNAL_NATIVE") == "0"
# Runs a test with the Python lane and the C lane (broker.journal.lane); the C one must be built unless
# WARRENMQ_JOURNAL_NATIVE=0 turns it off.
native_lanes = pytest.mark.parametrize(
    "native",
    [
        False,
        pytest.param(True, marks=pytest.mark.skipif(NATIVE_DISABLED, reason="WARRENMQ_JOURNAL_NATIVE=0")),
    ],
    ids=["python-lane", "native-lane"],
)
