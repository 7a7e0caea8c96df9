"""``erlang:phash2/1,2`` bit for bit, for the plugin exchange types that hash with it.

RabbitMQ's consistent-hash and modulus-hash exchanges pick a queue from ``erlang:phash2`` of the routing key
(or of a header value). ERTS computes it with ``make_hash2`` (erts/emulator/beam/utils.c): Bob Jenkins'
lookup2 mix over the term, binaries through ``block_hash``, the result masked to 27 bits. Erlang terms are
written here as Python values: ``bytes``/``str`` (UTF-8) are binaries, ``int`` integers, ``bool``/``None``/
`Atom` atoms (``True`` is ``true``, ``None`` is ``undefined``), ``float`` floats, ``tuple`` tuples and
``list`` proper lists. Checked against ``erlang:phash2`` of OTP 25 on thousands of terms
(tests/unit/core/test_erlang_hash.py).
"""

from __future__ import annotations

import struct


class Atom(str):
    """An Erlang atom by name (e.g. ``Atom("longstr")``); a plain ``str`` is a binary."""

    __slots__ = ()


PHASH2_RANGE = 1 << 27  # phash2/1's range

_M32 = 0xFFFFFFFF
_HCONST = 0x9E3779B9  # the golden ratio, lookup2's arbitrary value
# make_hash2's per-type constants: HCONST * n mod 2**32
_HCONST_2 = _HCONST * 2 & _M32
_HCONST_3 = _HCONST * 3 & _M32
_HCONST_4 = _HCONST * 4 & _M32
_HCONST_9 = _HCONST * 9 & _M32
_HCONST_10 = _HCONST * 10 & _M32
_HCONST_11 = _HCONST * 11 & _M32
_HCONST_12 = _HCONST * 12 & _M32
_HCONST_13 = _HCONST * 13 & _M32
_NIL_HASH = 3468870702  # a top-level [] (make_hash2's constant)
_NIL_DEF = 2  # NIL_DEF's tag value, mixed for a [] inside a term
_SMALL28_MIN, _SMALL28_MAX = -(1 << 27), (1 << 27) - 1  # wider smalls hash as bignums


def _mix(a: int, b: int, c: int) -> int:
    """lookup2's mix of three 32-bit words; the new c is the hash."""
    return _mix3(a, b, c)[2]


def _block_hash(data: bytes, initval: int) -> int:
    """ERTS block_hash: lookup2 over the bytes, 12 at a time (little-endian words), length in c."""
    length = len(data)
    a = b = _HCONST
    c = initval
    pos = 0
    while length - pos >= 12:
        x, y, z = struct.unpack_from("<III", data, pos)
        a = (a + x) & _M32
        b = (b + y) & _M32
        c = (c + z) & _M32
        a, b, c = _mix3(a, b, c)
        pos += 12
    tail = data[pos:] + bytes(12 - (length - pos))
    x, y, z = struct.unpack("<III", tail)
    # The tail's third word is shifted one byte up: "the first byte of c is reserved for the length".
    a = (a + x) & _M32
    b = (b + y) & _M32
    c = (c + length + (z << 8)) & _M32
    return _mix(a, b, c)


def _mix3(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - b - c) & _M32 ^ (c >> 13)
    b = (b - c - a) & _M32 ^ (a << 8) & _M32
    c = (c - a - b) & _M32 ^ (b >> 13)
    a = (a - b - c) & _M32 ^ (c >> 12)
    b = (b - c - a) & _M32 ^ (a << 16) & _M32
    c = (c - a - b) & _M32 ^ (b >> 5)
    a = (a - b - c) & _M32 ^ (c >> 3)
    b = (b - c - a) & _M32 ^ (a << 10) & _M32
    c = (c - a - b) & _M32 ^ (b >> 15)
    return a, b, c


def _hash2(x: int, y: int, const: int, hash_: int) -> int:
    """UINT32_HASH_2: mix two 32-bit values, each offset by a type constant, into the running hash."""
    return _mix((const + x) & _M32, (const + y) & _M32, hash_)


def atom_hash(name: str) -> int:
    """The atom table's hash of an atom's name (atom.c atom_hash: hashpjw over its UTF-8 bytes, a two-byte
    UTF-8 sequence for a Latin-1 character counted as that one character)."""
    raw = name.encode()
    h = 0
    i = 0
    while i < len(raw):
        v = raw[i]
        i += 1
        if i < len(raw) and (v & 0xFE) == 0xC2 and (raw[i] & 0xC0) == 0x80:
            v = ((v << 6) | (raw[i] & 0x3F)) & 0xFF
            i += 1
        h = ((h << 4) + v) & _M32
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
            h ^= g
    return h


def _integer(value: int, hash_: int) -> int:
    if _SMALL28_MIN <= value <= _SMALL28_MAX:
        # SINT32_HASH: negative numbers are mixed twice, first as their magnitude
        if value < 0:
            hash_ = _hash2(-value, 0, _HCONST, hash_)
        return _hash2(value & _M32, 0, _HCONST, hash_)
    const = _HCONST_10 if value < 0 else _HCONST_11
    magnitude = -value if value < 0 else value
    while True:  # one 64-bit bignum digit per round, low word first
        digit = magnitude & 0xFFFFFFFFFFFFFFFF
        hash_ = _hash2(digit & _M32, digit >> 32, const, hash_)
        magnitude >>= 64
        if not magnitude:
            return hash_


def _term(term: object, hash_: int) -> int:
    if type(term) is Atom:
        return _atom(term, hash_)
    if isinstance(term, bytes | bytearray | str):
        data = term.encode() if isinstance(term, str) else bytes(term)
        con = (_HCONST_13 + hash_) & _M32
        return _block_hash(data, con) if data else con
    if term is None or isinstance(term, bool):
        return _atom("undefined" if term is None else "true" if term else "false", hash_)
    if isinstance(term, int):
        return _integer(term, hash_)
    if isinstance(term, float):
        hi, lo = struct.unpack("<II", struct.pack("<d", term or 0.0))[::-1]  # -0.0 hashes as 0.0
        return _hash2(hi, lo, _HCONST_12, hash_)
    if isinstance(term, tuple):
        hash_ = _hash2(len(term), 0, _HCONST_9, hash_)
        for element in term:
            hash_ = _term(element, hash_)
        return hash_
    if isinstance(term, list):
        return _list(term, hash_)
    raise TypeError(f"no Erlang term for {type(term).__name__}")


def _atom(name: str, hash_: int) -> int:
    value = atom_hash(name)
    return value if hash_ == 0 else _hash2(value, 0, _HCONST_3, hash_)


def _list(items: list[object], hash_: int) -> int:
    """Runs of byte-sized integers (strings) are packed four to a word; other elements hash in turn."""
    shifted = count = 0
    for item in items:
        if type(item) is int and 0 <= item <= 255:
            shifted = ((shifted << 8) + item) & _M32
            count += 1
            if count == 4:
                hash_ = _hash2(shifted, 0, _HCONST_4, hash_)
                shifted = count = 0
            continue
        if count:
            hash_ = _hash2(shifted, 0, _HCONST_4, hash_)
            shifted = count = 0
        hash_ = _term(item, hash_)
    if count:
        hash_ = _hash2(shifted, 0, _HCONST_4, hash_)
    return _NIL_HASH if hash_ == 0 else _hash2(_NIL_DEF, 0, _HCONST_2, hash_)


def phash2(term: object, range_: int = PHASH2_RANGE) -> int:
    """``erlang:phash2(Term, Range)`` (``Range`` defaults to phash2/1's 2**27)."""
    value = _term(term, 0)
    if range_ & (range_ - 1) == 0:
        return value & (range_ - 1)
    return value % range_
