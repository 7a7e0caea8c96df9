"""Coverage-guided fuzzing (atheris) of the AMQP 1.0 codec: the frame scanner, the type decoder, the
performative, SASL and message-section decoders, which all see untrusted octets.

The input's first octet picks where to cut the rest in two; the rest is fed to a ``FrameScanner`` whole
and in those two pieces, which must give the same frames and the same error; every frame body goes through
``decode_performative`` / ``decode_sasl`` and a transfer's payload through ``decode_message``; the rest is
also decoded as one value, and whatever decodes must encode to octets that decode to the same value.
Anything but ``AMQP10Error`` and ``ProtocolHeaderMismatch`` is a crash: atheris stops, prints the input and
exits non-zero.

    python -m tests.hardening.fuzz_amqp10 -max_total_time=600 -print_final_stats=1   # the long run
"""

from __future__ import annotations

import sys
from typing import Any

import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from protocol.amqp10.decode import decode
    from protocol.amqp10.encode import encode
    from protocol.amqp10.errors import AMQP10Error, ProtocolHeaderMismatch
    from protocol.amqp10.frames import TYPE_SASL, Frame, FrameScanner
    from protocol.amqp10.message import decode_message
    from protocol.amqp10.performatives import Transfer, decode_performative
    from protocol.amqp10.sasl import decode_sasl
    from tests.unit.protocol.amqp10_strategies import same

EXPECTED = (AMQP10Error, ProtocolHeaderMismatch)


def _scan(pieces: list[bytes], expect_header: bool) -> tuple[list[Any], str]:
    scanner = FrameScanner(max_frame_size=65536, expect_header=expect_header)
    items: list[Any] = []
    try:
        for piece in pieces:
            items += scanner.feed(piece)
    except EXPECTED as error:
        return items + getattr(error, "frames", []), f"{type(error).__name__}: {error}"
    return items, ""


def _bodies(items: list[Any]) -> None:
    for item in items:
        if not isinstance(item, Frame) or item.is_heartbeat:
            continue
        try:
            if item.frame_type == TYPE_SASL:
                decode_sasl(item.body)
                continue
            performative, payload = decode_performative(item.body)
            if isinstance(performative, Transfer) and payload:
                decode_message(payload)
        except AMQP10Error:
            pass


def _value(data: bytes) -> None:
    try:
        value = decode(data)
    except AMQP10Error:
        return
    again = decode(encode(value))
    if not same(again, value):
        raise AssertionError(f"re-encoding changed the value: {value!r} -> {again!r}")


def test_one_input(data: bytes) -> None:
    if not data:
        return
    rest = data[1:]
    cut = data[0] % (len(rest) + 1)
    expect_header = bool(data[0] & 0x80)
    whole = _scan([rest], expect_header)
    pieces = _scan([rest[:cut], rest[cut:]], expect_header)
    if whole != pieces:
        raise AssertionError(f"cut at {cut} the scanner differs: {pieces!r} != {whole!r}")
    _bodies(whole[0])
    _value(rest)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
