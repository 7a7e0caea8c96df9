"""One journal file being written: Parquet (zstd, through pyarrow) or JSON Lines, hidden until complete.

Rows arrive as tuples in the schema's column order with timestamps in nanoseconds (what the loop thread can
take cheapest); files hold microseconds.

A file is written as ``.<name>.inprogress`` next to its final name and renamed (atomically, ``os.replace``) by
``complete()``; a half-written Parquet file has no footer and would break a reader, and Spark/Hadoop skip
dot-prefixed names. A file that received no rows is deleted instead of published.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from broker.journal.schema import COLUMNS, CONSTANT_COLUMNS, METADATA_KEY, SCHEMA_VERSION

PARQUET, JSONL = "parquet", "jsonl"


def default_format() -> str:
    """Parquet when pyarrow (the optional `journal` extra) is installed, else JSON Lines."""
    return PARQUET if importlib.util.find_spec("pyarrow") is not None else JSONL


class JournalFile(Protocol):
    path: Path  # the final name
    rows: int

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None: ...

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
    """Pay pyarrow's one-off costs now, before traffic: its import, and the pandas import its first
    conversion of Python values triggers (~0.3 s). Done later on the writer thread, that time is stolen
    from the event loop (they share the GIL) in the middle of the first batches."""
    import pyarrow as pa
    import pyarrow.compute
    import pyarrow.parquet

    pa.array([0], pa.int64())


class ParquetFile:
    def __init__(self, table: str, path: Path, node: str) -> None:
        import pyarrow.parquet as pq

        self.path = path
        self.rows = 0
        self._tmp = in_progress_path(path)
        self._schema = arrow_schema(table)
        self._kinds = [kind for _, kind in COLUMNS[table][CONSTANT_COLUMNS:]]
        self._node = node
        self._writer = pq.ParquetWriter(str(self._tmp), self._schema, compression="zstd")

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if not rows:
            return
        n = len(rows)
        schema = self._schema
        arrays = [
            pa.repeat(pa.scalar(SCHEMA_VERSION, pa.int16()), n),
            pa.repeat(pa.scalar(self._node, pa.string()), n),
        ]
        # Conversion from Python values holds the GIL (the loop waits meanwhile); zip and pa.array are the
        # cheapest ways found to do it, and the Parquet encoding below releases the GIL.
        for index, values in enumerate(zip(*rows, strict=True)):
            field = schema.field(index + CONSTANT_COLUMNS)
            if self._kinds[index] == "ts":  # nanoseconds in the rows, microseconds in the file
                arrays.append(pc.divide(pa.array(values, pa.int64()), 1000).cast(field.type))
            else:
                arrays.append(pa.array(values, field.type))
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
        self.rows += n

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

    def write(self, rows: Sequence[tuple[Any, ...]]) -> None:
        names, prefix, dumps, ts = self._names, self._prefix, json.dumps, self._ts
        lines = []
        for row in rows:
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
            self.rows += len(rows)

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
