"""Field-table decoding from 1 KB to 1 MB (`make bench`): linear in the table's size, many small fields or few
large ones (the shapes are `warrenmq bench decode`'s). pamqp's quadratic decoder is
benchmarked beside it up to 64 KB (beyond that it takes seconds).

Read the scaling off the means (``pytest benchmarks/test_field_table.py --benchmark-columns=mean``): the mean
divided by the size stays about flat for ours and grows with the size for pamqp.
"""

from __future__ import annotations

from typing import Any

import pytest
from pamqp import decode as pamqp_decode

from broker.bench.decode import SHAPES, SIZES_KB
from protocol.field_table import decode_table


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
