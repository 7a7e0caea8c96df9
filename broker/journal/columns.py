"""Packed row batches (broker.journal.rows) to Arrow tables, a few vectorised calls per column.

Runs on the writer thread, which shares the GIL with the event loop, so it never loops over rows in Python:
numpy views the packed buffer as a record array, integer columns go to Arrow as arrays with a null mask,
nanoseconds become microseconds in one division, and string columns are a ``take`` from the batch's small
table of distinct values. pyarrow and numpy are imported only here (the `journal` extra).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from broker.journal.rows import NULL, RowBuffer
from broker.journal.schema import CONSTANT_COLUMNS, SCHEMA_VERSION

_NUMPY = {"q": "<i8", "b": "i1", "i": "<i4"}
_DTYPES: dict[str, Any] = {}


def _dtype(batch: RowBuffer) -> Any:
    layout = batch.layout
    dtype = _DTYPES.get(layout.table)
    if dtype is None:
        formats = [_NUMPY[char] for char in layout.struct.format.lstrip("<")]
        dtype = _DTYPES[layout.table] = np.dtype({"names": list(layout.names), "formats": formats})
        assert dtype.itemsize == layout.size
    return dtype


def _dictionaries(batch: RowBuffer) -> tuple[Any, Any]:
    """The batch's distinct values as a string array and, when it has string lists, a list array (the
    entries of the other kind are null there, and no column indexes them)."""
    values = batch.values
    strings = pa.array([value if isinstance(value, str) else None for value in values], pa.string())
    lists = None
    if "strings" in batch.layout.kinds:
        entries = [list(value) if isinstance(value, tuple) else None for value in values]
        lists = pa.array(entries, pa.list_(pa.string()))
    return strings, lists


def table_of(batch: RowBuffer, schema: Any, node: str) -> Any:
    """The Arrow table of ``batch`` under ``schema`` (whose first columns are the constant v and node)."""
    n = batch.rows
    records = np.frombuffer(batch.data, dtype=_dtype(batch), count=n)
    strings, lists = _dictionaries(batch)
    arrays = [
        pa.repeat(pa.scalar(SCHEMA_VERSION, pa.int16()), n),
        pa.repeat(pa.scalar(node, pa.string()), n),
    ]
    for index, (name, kind) in enumerate(zip(batch.layout.names, batch.layout.kinds, strict=True)):
        field_type = schema.field(index + CONSTANT_COLUMNS).type
        column = records[name]
        if kind in ("string", "strings"):
            codes = pa.array(np.ascontiguousarray(column, dtype=np.int32))
            arrays.append((strings if kind == "string" else lists).take(codes))
        elif kind == "bool":
            mask = column < 0
            arrays.append(pa.array(column > 0, pa.bool_(), mask=mask if mask.any() else None))
        else:
            mask = column == NULL
            values = column // 1000 if kind == "ts" else column  # ns in the rows, µs in the file
            arrays.append(pa.array(values, field_type, mask=mask if mask.any() else None))
    return pa.Table.from_arrays(arrays, schema=schema)
