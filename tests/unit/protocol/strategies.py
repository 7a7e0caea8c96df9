"""Hypothesis strategies for AMQP values pamqp can encode (shared by the protocol property tests)."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import strategies as st


def utf8_text(max_bytes: int) -> st.SearchStrategy[str]:
    """Unicode text whose UTF-8 form fits ``max_bytes`` (no surrogates: they have no UTF-8 form)."""
    return st.text(st.characters(exclude_categories=["Cs"]), max_size=max_bytes).filter(
        lambda s: len(s.encode()) <= max_bytes
    )


short_strings = utf8_text(255)
octets = st.integers(0, 255)
shorts = st.integers(0, 0xFFFF)
longs = st.integers(0, 0xFFFFFFFF)
tags = st.integers(0, (1 << 64) - 1)
channels = st.integers(0, 0xFFFF)

_scalars: st.SearchStrategy[Any] = st.one_of(
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.floats(width=32, allow_nan=False),
    st.decimals(places=2, min_value=-1000, max_value=1000, allow_nan=False, allow_infinity=False),
    utf8_text(40),
    st.binary(max_size=20).map(bytearray),
    st.none(),
    st.datetimes(min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(2100, 1, 1)).map(
        lambda d: d.replace(microsecond=0, tzinfo=datetime.UTC)
    ),
)

table_keys = utf8_text(40)

field_tables: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.dictionaries(table_keys, _scalars, max_size=4),
    lambda children: st.dictionaries(
        table_keys,
        st.one_of(_scalars, children, st.lists(st.one_of(_scalars, children), max_size=3)),
        max_size=4,
    ),
    max_leaves=12,
)
