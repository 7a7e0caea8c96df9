"""ContentAssembler against a model: any split of any body reassembles; the size limit decides up front."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.channel_state import ContentAssembler
from protocol.errors import ChannelError


def header(body_size: int) -> bytes:
    return b"\x00\x3c\x00\x00" + body_size.to_bytes(8, "big") + b"\x10\x00\x01"


@st.composite
def split_bodies(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    body = draw(st.binary(max_size=500))
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
    points = [0, *cuts, len(body)]
    return body, [body[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=200, deadline=None)
@given(st.lists(split_bodies(), min_size=1, max_size=4), st.integers(0, 600))
def test_publishes_complete_exactly_once_with_their_body_or_are_refused(
    publishes: list[tuple[bytes, list[bytes]]], limit: int
) -> None:
    assembler = ContentAssembler(limit)
    for number, (body, parts) in enumerate(publishes):
        assembler.expect(number)
        try:
            completed = assembler.on_header(header(len(body)))
        except ChannelError:
            assert len(body) > limit
            completed = None
        else:
            assert len(body) <= limit
        if not body:
            assert completed is not None
            assert completed[0] == number
            assert completed[3] == b""
            continue
        assert completed is None
        results = [assembler.on_body(part) for part in parts if part] or [None]
        done = [r for r in results if r is not None]
        if len(body) > limit:
            assert done == []  # a refused message's body is swallowed
        else:
            assert len(done) == 1
            assert results[-1] is done[0]
            assert (done[0][0], done[0][3]) == (number, body)
        assert assembler.idle
