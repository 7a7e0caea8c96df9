"""ContentAssembler: every transition, rabbit_command_assembler's texts, the size check before the body."""

from __future__ import annotations

import pytest
from pamqp import commands

from protocol.channel_state import MAX_MSG_SIZE, TRANSITIONS, AssemblerState, ContentAssembler
from protocol.content_header import HeaderInfo
from protocol.errors import ChannelError, HardError, ReplyCode
from tests.unit.protocol.reference import header_payload

CONTEXT = ("amq.direct", "rk", False)


def header(body_size: int) -> bytes:
    return header_payload(body_size, commands.Basic.Properties(delivery_mode=2))


def publishing(body_size: int, limit: int = 1 << 20) -> ContentAssembler:
    assembler = ContentAssembler(limit)
    assembler.expect(CONTEXT)
    assert assembler.on_header(header(body_size)) is None
    return assembler


def test_starts_idle() -> None:
    assembler = ContentAssembler(100)
    assert assembler.idle
    assert assembler.state is AssemblerState.IDLE
    assembler.on_method()  # a method frame while idle is fine


def test_zero_body_completes_on_the_header() -> None:
    assembler = ContentAssembler(100)
    assembler.expect(CONTEXT)
    assert assembler.state is AssemblerState.AWAIT_HEADER
    payload = header(0)
    assert assembler.on_header(payload) == (CONTEXT, HeaderInfo(0, 2), payload, b"")
    assert assembler.idle


def test_single_body_frame_completes_without_copy() -> None:
    assembler = publishing(5)
    assert assembler.state is AssemblerState.AWAIT_BODY
    body = b"hello"
    completed = assembler.on_body(body)
    assert completed is not None
    context, info, payload, joined = completed
    assert (context, info, payload) == (CONTEXT, HeaderInfo(5, 2), header(5))
    assert joined is body
    assert assembler.idle


def test_body_frames_are_joined_in_order() -> None:
    assembler = publishing(10)
    assert assembler.on_body(b"0123") is None
    assert assembler.on_body(b"") is None  # an empty body frame is legal
    assert assembler.on_body(b"456") is None
    completed = assembler.on_body(b"789")
    assert completed is not None
    assert completed[3] == b"0123456789"
    assert assembler.idle


def test_the_assembler_is_reusable_after_completion() -> None:
    assembler = publishing(1)
    assembler.on_body(b"a")
    assembler.expect("next")
    completed = assembler.on_header(header(0))
    assert completed is not None
    assert completed[0] == "next"


def test_method_while_awaiting_header_is_505_on_basic_publish() -> None:
    assembler = ContentAssembler(100)
    assembler.expect(CONTEXT)
    with pytest.raises(HardError) as raised:
        assembler.on_method()
    assert raised.value.reply_text == (
        "UNEXPECTED_FRAME - expected content header for class 60, got non content header frame instead"
    )
    assert (raised.value.class_id, raised.value.method_id) == (60, 40)


def test_method_while_awaiting_body_is_505() -> None:
    with pytest.raises(HardError) as raised:
        publishing(5).on_method()
    assert raised.value.text == "expected content body, got non content body frame instead"


def test_expect_while_busy_is_505() -> None:
    with pytest.raises(HardError, match="expected content body"):
        publishing(5).expect(CONTEXT)


@pytest.mark.parametrize("frame", ["header", "body"])
def test_content_frame_while_idle_is_505_without_a_method(frame: str) -> None:
    assembler = ContentAssembler(100)
    feed = assembler.on_header if frame == "header" else assembler.on_body
    with pytest.raises(HardError) as raised:
        feed(header(1))
    assert raised.value.reply_text == "UNEXPECTED_FRAME - expected method frame, got non method frame instead"
    assert (raised.value.class_id, raised.value.method_id) == (0, 0)


def test_body_while_awaiting_header_is_505() -> None:
    assembler = ContentAssembler(100)
    assembler.expect(CONTEXT)
    with pytest.raises(HardError, match="expected content header for class 60, got non content header frame"):
        assembler.on_body(b"x")


def test_second_header_while_awaiting_body_is_505() -> None:
    with pytest.raises(HardError, match="expected content body, got non content body frame instead"):
        publishing(5).on_header(header(5))


def test_body_longer_than_announced_is_a_frame_error() -> None:
    assembler = publishing(3)
    with pytest.raises(HardError) as raised:
        assembler.on_body(b"four")
    assert raised.value.reply_text == "FRAME_ERROR - content body frame exceeds remaining content size"


def test_size_is_checked_from_the_header_before_any_body() -> None:
    assembler = ContentAssembler(1000)
    assembler.expect(CONTEXT)
    with pytest.raises(ChannelError) as raised:
        assembler.on_header(header(1001))
    assert (
        raised.value.reply_text
        == "PRECONDITION_FAILED - message size 1001 is larger than configured max size 1000"
    )
    assert (raised.value.class_id, raised.value.method_id) == (60, 40)


def test_body_of_a_refused_message_is_swallowed_then_idle() -> None:
    assembler = ContentAssembler(10)
    assembler.expect(CONTEXT)
    with pytest.raises(ChannelError):
        assembler.on_header(header(25))
    assert assembler.discarding
    assert assembler.on_body(b"x" * 20) is None
    assert assembler.on_body(b"x" * 5) is None
    assert assembler.idle
    assert not assembler.discarding


def test_max_size_equal_to_the_hard_cap_uses_rabbitmqs_short_text() -> None:
    assembler = ContentAssembler(MAX_MSG_SIZE - 1)
    assembler.expect(CONTEXT)
    with pytest.raises(ChannelError, match="larger than configured max size"):
        assembler.on_header(header(MAX_MSG_SIZE))
    capped = ContentAssembler(MAX_MSG_SIZE)
    capped.expect(CONTEXT)
    assert capped.on_header(header(MAX_MSG_SIZE)) is None  # exactly the cap is allowed


def test_body_size_above_the_hard_cap_is_a_connection_frame_error() -> None:
    assembler = ContentAssembler(1 << 40)  # a configured size above the cap does not lift it
    assembler.expect(CONTEXT)
    with pytest.raises(HardError) as raised:
        assembler.on_header(header(MAX_MSG_SIZE + 1))
    assert raised.value.code is ReplyCode.FRAME_ERROR
    assert (
        raised.value.text
        == f"content body size {MAX_MSG_SIZE + 1} exceeds maximum allowed size {MAX_MSG_SIZE}"
    )


def test_header_errors_propagate_from_parse() -> None:
    assembler = ContentAssembler(100)
    assembler.expect(CONTEXT)
    with pytest.raises(HardError, match="got one for class 50 instead"):
        assembler.on_header(b"\x00\x32\x00\x00" + bytes(8) + b"\x00\x00")


def test_reset_forgets_content_in_progress() -> None:
    assembler = publishing(5)
    assembler.on_body(b"ab")
    assembler.reset()
    assert assembler.idle
    assembler.expect(CONTEXT)
    assert assembler.on_header(header(1)) is None
    completed = assembler.on_body(b"z")
    assert completed is not None
    assert completed[3] == b"z"


def test_transition_table_covers_every_state() -> None:
    assert set(TRANSITIONS) == set(AssemblerState)
    assert AssemblerState.AWAIT_BODY not in TRANSITIONS[AssemblerState.IDLE]
