"""`warrenmq bench decode`: field-table decoding from 1 KB to 1 MB, in this process (no broker needed).

The decoder for untrusted tables must be linear in the table's size (RabbitMQ's is): the scenario times
`protocol.field_table.decode_table` on three shapes (many small int fields, one array of 1-byte void fields,
four large longstrs) at each size and reports the microseconds per table and the cost per KB at 1 MB over
the cost per KB at 1 KB (``*_scaling``: about 1 when linear; a quadratic decoder's grows with the size). The
same shapes feed ``benchmarks/test_field_table.py`` (pytest-benchmark, with pamqp beside it).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from protocol.field_table import decode_table

SIZES_KB = (1, 8, 64, 1024)


def _table(body: bytes) -> bytes:
    return struct.pack("!I", len(body)) + body


def many_small(size_kb: int) -> bytes:
    """~9-byte int fields: ``k<n>`` -> signed 32-bit."""
    fields, total, i = [], 0, 0
    while total < size_kb * 1024:
        field = bytes((len(b"k%d" % i),)) + b"k%d" % i + b"I" + struct.pack("!i", i)
        fields.append(field)
        total += len(field)
        i += 1
    return _table(b"".join(fields))


def void_array(size_kb: int) -> bytes:
    """One array of 1-byte void fields (the cheapest flood)."""
    n = size_kb * 1024
    return _table(b"\x01aA" + struct.pack("!I", n) + b"V" * n)


def few_large(size_kb: int) -> bytes:
    """Four longstr fields sharing the size."""
    chunk = b"x" * (size_kb * 256)
    return _table(
        b"".join(b"\x01" + bytes((97 + i,)) + b"S" + struct.pack("!I", len(chunk)) + chunk for i in range(4))
    )


SHAPES: dict[str, Callable[[int], bytes]] = {
    "many_small": many_small,
    "void_array": void_array,
    "few_large": few_large,
}


def best_us(raw: bytes, budget_s: float = 0.2) -> float:
    """The best of repeated decodes of ``raw`` within about ``budget_s`` of CPU, in microseconds of this
    thread's CPU time (on a shared machine wall time mostly measures the other processes)."""
    best = float("inf")
    deadline = time.thread_time() + budget_s
    runs = 0
    while runs < 3 or (time.thread_time() < deadline and runs < 1000):
        started = time.thread_time()
        decode_table(raw)
        best = min(best, time.thread_time() - started)
        runs += 1
    return best * 1e6


def scaling(count: int = 1) -> dict[str, float]:
    """Per shape and size, the best decode time (µs); per shape, the per-KB cost ratio 1 MB / 1 KB.
    ``count`` multiplies the time budget of each measurement."""
    figures: dict[str, float] = {}
    for shape, build in SHAPES.items():
        per_kb = {}
        for size_kb in SIZES_KB:
            micros = best_us(build(size_kb), 0.2 * count)
            figures[f"{shape}_{size_kb}KB_us"] = round(micros, 1)
            per_kb[size_kb] = micros / size_kb
        figures[f"{shape}_scaling"] = round(per_kb[SIZES_KB[-1]] / per_kb[SIZES_KB[0]], 2)
    return figures
