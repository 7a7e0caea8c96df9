"""A batch of journal rows as the loop thread builds it: numbers packed in one bytearray, strings by index.

Why not tuples: the writer thread shares the GIL with the event loop, and turning Python values into Arrow
columns (a transpose, then one conversion per value) cost it ~390 ns a row, all of it taken from the loop.
Packed rows cost the loop ~100 ns more to build (one ``struct.pack_into`` per row plus a dict lookup per
string) and the writer turns the whole batch into columns with a few vectorised calls (~45 ns a row).

Layout: each table's columns (schema.COLUMNS, minus the constant ones) in order, little-endian, unpadded:
timestamps and integers as int64 (``NULL`` for null; timestamps in nanoseconds), booleans as int8 (-1 null),
strings and string lists as int32 indexes into ``values`` (0 = null). ``values`` starts with the fixed
vocabulary (event names, outcomes, reasons) so the hot path can use constant codes for those.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, Final

from broker.journal import schema as s

NULL: Final = -(2**63)  # int64 null
_SPARES = 2
_FORMAT = {"ts": "q", "int16": "q", "int32": "q", "int64": "q", "bool": "b", "string": "i", "strings": "i"}

VOCABULARY: Final[tuple[str | None, ...]] = (
    None,
    s.PUBLISH,
    s.ROUTE,
    s.RETURN,
    s.DELIVER,
    s.ACK,
    s.NACK,
    s.REQUEUE,
    s.DEAD_LETTER,
    s.EXPIRE,
    s.DROP,
    s.JOURNAL_DROP,
    s.OUTCOME_UNROUTABLE,
    s.OUTCOME_RETURNED,
    "rejected",
    "NO_ROUTE",
    "/",
)
CODE: Final[dict[Hashable, int]] = {value: index for index, value in enumerate(VOCABULARY)}


class Layout:
    """How one table's rows are packed, and spare buffers for them."""

    __slots__ = ("kinds", "names", "pack_into", "size", "spare", "struct", "table")

    def __init__(self, table: str) -> None:
        columns = s.COLUMNS[table][s.CONSTANT_COLUMNS :]
        self.table = table
        self.names = tuple(name for name, _ in columns)
        self.kinds = tuple(kind for _, kind in columns)
        self.struct = struct.Struct("<" + "".join(_FORMAT[kind] for kind in self.kinds))
        self.size = self.struct.size
        self.pack_into = self.struct.pack_into
        # Buffers the writer is done with. A fresh one is zero-filled (and page-faulted in, ~0.5 MB) by the
        # loop thread; a recycled one is overwritten row by row. The writer appends, the loop pops.
        self.spare: deque[bytearray] = deque()


LAYOUTS: Final = {table: Layout(table) for table in s.TABLES}


class RowBuffer:
    """Rows of one table until they are handed to the writer; afterwards only the writer reads it."""

    __slots__ = ("codes", "data", "layout", "limit", "queues", "recyclable", "rows", "values")

    def __init__(self, table: str, limit: int, recyclable: bool = False) -> None:
        self.layout = layout = LAYOUTS[table]
        self.limit = limit
        self.recyclable = recyclable  # the recorder's big buffers; not the writer's or tests' small ones
        length = layout.size * limit
        data = layout.spare.pop() if recyclable and layout.spare else None
        self.data = data if data is not None and len(data) == length else bytearray(length)
        self.rows = 0
        self.values: list[Hashable] = list(VOCABULARY)
        self.codes: dict[Hashable, int] = dict(CODE)
        self.queues: dict[object, tuple[int, int]] = {}  # queue -> (vhost code, name code)

    @property
    def table(self) -> str:
        return self.layout.table

    @property
    def full(self) -> bool:
        return self.rows >= self.limit

    def intern(self, value: Hashable) -> int:
        """The code of ``value``, added on first use (the hot path tries ``codes.get`` inline first)."""
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code

    def queue_codes(self, queue: Any) -> tuple[int, int]:
        """(vhost, name) codes of a ``broker.core.queues.queue.Queue``, looked up once per batch by
        identity."""
        codes = self.queues.get(queue)
        if codes is None:
            codes = self.queues[queue] = (self.intern(queue.vhost), self.intern(queue.name))
        return codes

    def append(self, row: Sequence[Any]) -> None:
        """Pack one row of plain values (None for nulls; tuples for string lists). The general, slower path
        for rare rows, the writer's own rows and tests; the recorder packs its hot rows inline."""
        packed: list[int] = []
        for kind, value in zip(self.layout.kinds, row, strict=True):
            if kind == "bool":
                packed.append(-1 if value is None else int(bool(value)))
            elif kind in ("string", "strings"):
                packed.append(self.intern(tuple(value) if isinstance(value, list) else value))
            else:
                packed.append(NULL if value is None else int(value))
        self.layout.pack_into(self.data, self.rows * self.layout.size, *packed)
        self.rows += 1

    def tuples(self) -> Iterator[tuple[Any, ...]]:
        """The rows as plain values again (timestamps still in ns), for JSON Lines and tests."""
        values, kinds = self.values, self.layout.kinds
        view = memoryview(self.data)[: self.rows * self.layout.size]
        for packed in self.layout.struct.iter_unpack(view):
            row: list[Any] = []
            for kind, value in zip(kinds, packed, strict=True):
                if kind == "bool":
                    row.append(None if value < 0 else bool(value))
                elif kind == "string":
                    row.append(values[value])
                elif kind == "strings":
                    entry = values[value]
                    row.append(list(entry) if isinstance(entry, tuple) else [])
                else:
                    row.append(None if value == NULL else value)
            yield tuple(row)

    def first_ts(self) -> int:
        """The first row's timestamp (ns): it names the file the batch starts."""
        return int(struct.unpack_from("<q", self.data, 0)[0])


def recycle(batch: RowBuffer) -> None:
    """The writer has written ``batch`` (nothing refers to its memory any more): keep it for reuse."""
    spare = batch.layout.spare
    if batch.recyclable and len(spare) < _SPARES:
        spare.append(batch.data)


def batch_of(table: str, rows: Sequence[Sequence[Any]]) -> RowBuffer:
    """A buffer holding ``rows`` (tuples in column order), for the writer's own rows and for tests."""
    buffer = RowBuffer(table, max(len(rows), 1))
    for row in rows:
        buffer.append(row)
    return buffer
