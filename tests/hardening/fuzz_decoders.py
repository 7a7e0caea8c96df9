"""Coverage-guided fuzzing (atheris) of the frame splitter, the method/content-header codecs and the
field-table decoder, which all see untrusted bytes.

One input is split in two: a prefix fed as table bytes to ``decode_table`` (compared with pamqp wherever ours
accepts it), and the whole input fed to a ``FrameBuffer`` whose frames go through ``decode_method``,
``parse_content_header`` and ``decode_properties``; a native ``FrameBuffer`` (protocol/_wire.c) must split it
into the same frames and errors. Anything but the typed errors those raise by design is a
crash: atheris stops, prints the input and exits non-zero.

    python -m tests.hardening.fuzz_decoders -max_total_time=600 -print_final_stats=1   # the long run
"""

from __future__ import annotations

import struct
import sys

import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from pamqp import decode as pamqp_decode

    from protocol import framing
    from protocol.codec import decode_method, decode_properties
    from protocol.content_header import parse_content_header
    from protocol.errors import AMQPError, ProtocolHeaderError
    from protocol.field_table import FieldTableError, decode_table
    from protocol.framing import Frame, FrameBuffer, ungrouped

EXPECTED = (AMQPError, ProtocolHeaderError, FieldTableError)


def _table(data: bytes) -> None:
    raw = struct.pack("!I", len(data)) + data
    try:
        ours = decode_table(raw)
    except FieldTableError:
        return
    except UnicodeDecodeError:
        return  # a table key that is not UTF-8: the callers answer 501 Malformed UTF-8
    # Whatever we accept, pamqp reads the same way (repr: NaN floats compare unequal).
    theirs = pamqp_decode.field_table(raw)[1]
    if repr(ours) != repr(theirs):
        raise AssertionError(f"differs from pamqp: {ours!r} != {theirs!r}")


def _split(data: bytes, native: bool) -> tuple[list[Frame], str]:
    """The frames a buffer returns for ``data`` (a native one's items ungrouped), and its error, if any."""
    buffer = FrameBuffer(131072, expect_protocol_header=False, native=native)
    try:
        return ungrouped(buffer.feed(data)), ""
    except EXPECTED as error:
        return ungrouped(getattr(error, "frames", [])), f"{type(error).__name__}: {error}"


def _frames(data: bytes) -> None:
    frames, error = _split(data, native=False)
    # The C scanner (protocol/_wire.c, where built) must give the same frames and the same error.
    if framing._WIRE is not None and _split(data, native=True) != (frames, error):
        raise AssertionError(
            f"the native scanner differs: {_split(data, native=True)!r} != {(frames, error)!r}"
        )
    if error:
        return
    for frame_type, _, payload in frames:
        try:
            if frame_type == 1:
                decode_method(payload)
            elif frame_type == 2:
                parse_content_header(payload)
                decode_properties(payload)
        except EXPECTED:
            pass


def test_one_input(data: bytes) -> None:
    split = data[0] if data else 0
    _table(data[1 : 1 + split])
    _frames(data[1:])


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
