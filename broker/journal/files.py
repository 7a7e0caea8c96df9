"""One journal file being written: Parquet (zstd, through pyarrow) or JSON Lines, hidden until complete.

Rows arrive as packed batches (broker.journal.rows) with timestamps in nanoseconds (what the loop thread can
take cheapest); files hold microseconds.

A file is written as ``.<name>.inprogress`` next to its final name and renamed (atomically, ``os.replace``) by
``complete()``; a half-written Parquet file has no footer and would break a reader, and Spark/Hadoop skip
dot-prefixed names. A file that received no rows is deleted instead of published.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Protocol

from broker.journal.rows import RowBuffer
from broker.journal.schema import COLUMNS, CONSTANT_COLUMNS, METADATA_KEY, SCHEMA_VERSION

PARQUET, JSONL = "parquet", "jsonl"
_INTS = frozenset(("ts", "int16", "int32", "int64"))


def default_format() -> str:
    """Parquet when pyarrow and numpy (the optional `journal` extra) are installed, else JSON Lines."""
    found = all(importlib.util.find_spec(name) is not None for name in ("pyarrow", "numpy"))
    return PARQUET if found else JSONL


class JournalFile(Protocol):
    path: Path  # the final name
    rows: int

    def write(self, batch: RowBuffer) -> None: ...

    def size(self) -> int: ...

    def complete(self) -> None: ...


def in_progress_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.inprogress")


def arrow_schema(table: str) -> Any:
    """The pyarrow schema of ``table`` (timestamps as timestamp[us, UTC])."""
    import pyarrow as pa  # imported only when a Parquet journal is written: the broker starts without it

    types = {
        "int16": pa.int16(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "string": pa.string(),
        "bool": pa.bool_(),
        "ts": pa.timestamp("us", tz="UTC"),
        "strings": pa.list_(pa.string()),
    }
    fields = [pa.field(name, types[kind]) for name, kind in COLUMNS[table]]
    return pa.schema(fields, metadata={METADATA_KEY: str(SCHEMA_VERSION).encode()})


def warm_up() -> None:
    """Pay the Parquet path's one-off costs now, before traffic: the imports, and the pandas import pyarrow
    triggers on its first conversion of Python values (~0.3 s). Done later on the writer thread, that time
    is taken from the event loop (they share the GIL) in the middle of the first batches."""
    import pyarrow as pa
    import pyarrow.parquet

    pa.array([0], pa.int64())


class ParquetFile:
    def __init__(self, table: str, path: Path, node: str) -> None:
        import pyarrow.parquet as pq

        self.path = path
        self.rows = 0
        self._tmp = in_progress_path(path)
        self._schema = arrow_schema(table)
        self._node = node
        # Encodings chosen by measurement (8192 compact rows, zstd): the default dictionary-encodes every
        # column, which for timestamps and ids costs CPU and makes files larger; dictionaries for strings,
        # delta encoding for integers and statistics only on timestamps (for time-range pruning) cut the
        # encoding from ~470 to ~170 ns a row and the file from ~11 to <1 byte a row. This work releases
        # the GIL but runs on the second core, which the clients and the kernel's network stack share.
        kinds = dict(COLUMNS[table])
        self._writer = pq.ParquetWriter(
            str(self._tmp),
            self._schema,
            compression="zstd",
            use_dictionary=[name for name, kind in kinds.items() if kind in ("string", "strings")],
            column_encoding={name: "DELTA_BINARY_PACKED" for name, kind in kinds.items() if kind in _INTS},
            write_statistics=[name for name, kind in kinds.items() if kind == "ts"],
        )

    def write(self, batch: RowBuffer) -> None:
        from broker.journal.columns import table_of

        if not batch.rows:
            return
        # Building the table holds the GIL briefly (vectorised); the Parquet encoding releases it.
        self._writer.write_table(table_of(batch, self._schema, self._node))
        self.rows += batch.rows

    def size(self) -> int:
        return os.stat(self._tmp).st_size

    def complete(self) -> None:
        self._writer.close()
        _publish(self._tmp, self.path, self.rows)


class JsonlFile:
    """JSON Lines with the same column names; timestamps stay integers (µs), readers apply the schema."""

    def __init__(self, table: str, path: Path, node: str) -> None:
        self.path = path
        self.rows = 0
        self._tmp = in_progress_path(path)
        self._names = [name for name, _ in COLUMNS[table][CONSTANT_COLUMNS:]]
        kinds = [kind for _, kind in COLUMNS[table][CONSTANT_COLUMNS:]]
        self._ts = [index for index, kind in enumerate(kinds) if kind == "ts"]
        self._prefix = json.dumps({"v": SCHEMA_VERSION, "node": node})[:-1] + ", "
        self._file = open(self._tmp, "w", encoding="utf-8")  # noqa: SIM115 - closed by complete()
        self._size = 0

    def write(self, batch: RowBuffer) -> None:
        names, prefix, dumps, ts = self._names, self._prefix, json.dumps, self._ts
        lines = []
        for row in batch.tuples():
            values = list(row)
            for index in ts:  # nanoseconds in the rows, microseconds in the file
                if values[index] is not None:
                    values[index] //= 1000
            lines.append(prefix + dumps(dict(zip(names, values, strict=True)))[1:])
        if lines:
            text = "\n".join(lines) + "\n"
            self._file.write(text)
            self._file.flush()
            self._size += len(text)
            self.rows += batch.rows

    def size(self) -> int:
        return self._size

    def complete(self) -> None:
        self._file.close()
        _publish(self._tmp, self.path, self.rows)


def _publish(tmp: Path, final: Path, rows: int) -> None:
    if rows:
        os.replace(tmp, final)
    else:
        tmp.unlink(missing_ok=True)


def open_file(fmt: str, table: str, path: Path, node: str) -> JournalFile:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == PARQUET:
        return ParquetFile(table, path, node)
    return JsonlFile(table, path, node)
