"""A message header as RabbitMQ 3.10's ``rabbit_misc:table_lookup`` returns it: the pair ``{Type, Value}`` of
``rabbit_binary_parser:parse_table/1``, read from the raw content header.

The consistent-hash exchange of 3.10 hashes that pair for its ``hash-header`` (``erlang:phash2({longstr,
<<"v">>})``), so the field's wire type matters: an ``I`` 5 and a ``b`` 5 are ``{signedint, 5}`` and
``{byte, 5}``, which the decoded headers (a Python ``int`` either way) cannot tell apart. Terms are written as
`broker.core.exchanges.erlang_hash` takes them: binaries as ``bytes``, type names as `Atom`, booleans as
``bool``, void as ``None`` (``undefined``), a decimal as ``(Scale, Value)``, a table as a list of ``(Name,
Type, Value)``, an array as a list of ``(Type, Value)``. The caller has validated the table (the session
refuses malformed ones), so lengths are trusted.
"""

from __future__ import annotations

import struct

from broker.core.exchanges.erlang_hash import Atom

# parse_table/1's fixed-size fields: type octet -> (its type atom, struct format).
_FIXED: dict[int, tuple[Atom, struct.Struct]] = {
    ord(code): (Atom(name), struct.Struct(fmt))
    for code, name, fmt in (
        ("b", "byte", "!b"),
        ("B", "unsignedbyte", "!B"),
        ("s", "short", "!h"),
        ("u", "unsignedshort", "!H"),
        ("I", "signedint", "!i"),
        ("i", "unsignedint", "!I"),
        ("l", "long", "!q"),
        ("L", "long", "!q"),  # parse_table/1 reads 'L' as a signed long too
        ("d", "double", "!d"),
        ("f", "float", "!f"),
        ("T", "timestamp", "!Q"),
    )
}
_U32 = struct.Struct("!I")
_DECIMAL = struct.Struct("!BI")  # $D, Before:8/unsigned, After:32/unsigned
_LONGSTR, _BINARY, _TABLE, _ARRAY = Atom("longstr"), Atom("binary"), Atom("table"), Atom("array")
_BOOL, _DECIMAL_TYPE, _VOID = Atom("bool"), Atom("decimal"), Atom("void")
# Content-header property flags: content_type and content_encoding (shortstrs) come before headers.
_CONTENT_TYPE, _CONTENT_ENCODING, _HEADERS = 1 << 15, 1 << 14, 1 << 13


def header_pair(header_payload: bytes, name: str) -> tuple[Atom, object] | None:
    """``rabbit_misc:table_lookup(Headers, Name)``: the first field called ``name``, or None (``undefined``)
    when the message has no such header."""
    flags = int.from_bytes(header_payload[12:14], "big")
    if not flags & _HEADERS:
        return None
    pos = 14
    for bit in (_CONTENT_TYPE, _CONTENT_ENCODING):
        if flags & bit:
            pos += 1 + header_payload[pos]
    end = pos + 4 + _U32.unpack_from(header_payload, pos)[0]
    wanted = name.encode()
    pos += 4
    while pos < end:
        key = header_payload[pos + 1 : pos + 1 + header_payload[pos]]
        pos += 1 + header_payload[pos]
        kind, value, pos = _field(header_payload, pos)
        if key == wanted:
            return kind, value
    return None


def _field(data: bytes, pos: int) -> tuple[Atom, object, int]:
    """One field's type and value at ``pos`` (its type octet), and where the next one starts."""
    code = data[pos]
    pos += 1
    fixed = _FIXED.get(code)
    if fixed is not None:
        kind, codec = fixed
        return kind, codec.unpack_from(data, pos)[0], pos + codec.size
    if code == ord("t"):
        return _BOOL, data[pos] != 0, pos + 1
    if code == ord("D"):
        return _DECIMAL_TYPE, _DECIMAL.unpack_from(data, pos), pos + _DECIMAL.size
    if code == ord("V"):
        return _VOID, None, pos
    end = pos + 4 + _U32.unpack_from(data, pos)[0]
    raw = data[pos + 4 : end]
    if code == ord("S"):
        return _LONGSTR, raw, end
    if code == ord("x"):
        return _BINARY, raw, end
    items: list[object] = []
    inner = pos + 4
    if code == ord("F"):
        while inner < end:
            key = data[inner + 1 : inner + 1 + data[inner]]
            kind, value, inner = _field(data, inner + 1 + data[inner])
            items.append((key, kind, value))
        return _TABLE, items, end
    if code == ord("A"):
        while inner < end:
            kind, value, inner = _field(data, inner)
            items.append((kind, value))
        return _ARRAY, items, end
    raise ValueError(f"unknown field type {chr(code)!r}")
