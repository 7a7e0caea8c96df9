"""erlang_terms: binaries rendered as io_lib:format's ~w and ~tp render them."""

from __future__ import annotations

import pytest

from protocol.erlang_terms import binary_tp, binary_w, payload_snippet


@pytest.mark.parametrize(
    ("data", "rendered"),
    [
        (b"", "<<>>"),
        (b"guest", '<<"guest">>'),
        (b'a"b\\c\n', '<<"a\\"b\\\\c\\n">>'),
        (b"\x00guest", "<<0,103,117,101,115,116>>"),
        ("é".encode(), '<<"é"/utf8>>'),
        (b"\xe9t\xe9", '<<"été">>'),  # printable latin-1
        ("ключ".encode(), "<<208,186,208,187,209,142,209,135>>"),  # beyond latin-1: bytes under +pc latin1
    ],
)
def test_binary_tp(data: bytes, rendered: str) -> None:
    assert binary_tp(data) == rendered


def test_binary_w_never_quotes() -> None:
    assert binary_w(b"ab") == "<<97,98>>"


def test_payload_snippet() -> None:
    assert payload_snippet(b"x" * 16) == ("all", b"x" * 16)
    assert payload_snippet(b"x" * 17) == ("first 16", b"x" * 16)
