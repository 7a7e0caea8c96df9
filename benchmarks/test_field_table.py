"""Field-table decoding from 1 KB to 1 MB (`make bench`): linear in the table's size, many small fields or few
large ones (issue 17 part 2). pamqp's quadratic decoder is benchmarked beside it up to 64 KB (beyond that it
takes seconds).

Read the scaling off the means (``pytest benchmarks/test_field_table.py --benchmark-columns=mean``): the mean
divided by the size stays about flat for ours and grows with the size for pamqp.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from pamqp import decode as pamqp_decode

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


@pytest.mark.parametrize("size_kb", SIZES_KB)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_decode_table(benchmark: Any, shape: str, size_kb: int) -> None:
    raw = SHAPES[shape](size_kb)
    benchmark.extra_info["size_bytes"] = len(raw)
    result = benchmark(decode_table, raw)
    assert result


@pytest.mark.parametrize("size_kb", SIZES_KB[:3])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_pamqp_decode_table_for_comparison(benchmark: Any, shape: str, size_kb: int) -> None:
    raw = SHAPES[shape](size_kb)
    benchmark.extra_info["size_bytes"] = len(raw)
    result = benchmark.pedantic(pamqp_decode.field_table, (raw,), rounds=3, iterations=1)
    assert result[1]
