"""Render values as Erlang's ``io_lib:format`` does, so texts built from RabbitMQ's format strings match.

RabbitMQ formats binaries with ``~w`` (always ``<<1,2,3>>``) or ``~tp`` (``<<"text">>`` when printable). We
render on one line: Erlang's pretty printer may wrap a long ``~tp`` term at 80 columns, which we do not.
"""

from __future__ import annotations

# io_lib:printable_latin1_list/1: 32..126, 160..255 and these escapes (the default +pc latin1 range).
_ESCAPES = {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0B: "\\v",
    0x0C: "\\f",
    0x0D: "\\r",
    0x1B: "\\e",
    0x22: '\\"',
    0x5C: "\\\\",
}


def _printable_latin1(data: bytes) -> bool:
    return all(32 <= b <= 126 or b >= 160 or b in _ESCAPES for b in data)


def _quoted(chars: str) -> str:
    return "".join(_ESCAPES.get(ord(c), c) for c in chars)


def binary_w(data: bytes) -> str:
    """``io_lib:format("~w", [Bin])``: ``<<>>`` or ``<<0,60,0,40>>``."""
    return "<<" + ",".join(map(str, data)) + ">>"


def binary_tp(data: bytes) -> str:
    """``io_lib:format("~tp", [Bin])``: quoted if printable (``/utf8`` for UTF-8 text), else bytes."""
    if not data:
        return "<<>>"
    if all(b < 128 for b in data) and _printable_latin1(data):
        return f'<<"{_quoted(data.decode("ascii"))}">>'
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(ord(c) <= 255 for c in text) and _printable_latin1(text.encode("latin-1")):
        return f'<<"{_quoted(text)}"/utf8>>'
    if _printable_latin1(data):
        return f'<<"{_quoted(data.decode("latin-1"))}">>'
    return binary_w(data)


def payload_snippet(payload: bytes) -> tuple[str, bytes]:
    """rabbit_reader:payload_snippet/1: the whole payload up to 16 octets, else its first 16."""
    if len(payload) <= 16:
        return "all", payload
    return "first 16", payload[:16]
