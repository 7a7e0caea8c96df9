"""Per-channel content assembly (method -> header -> body) as an explicit state machine.

Mirrors ``rabbit_command_assembler:process/2`` (deps/rabbit_common/src/rabbit_command_assembler.erl) for
its states, checks and 505 texts, plus the max-message-size check of ``rabbit_channel:check_msg_size/2``,
which we make from the header's body_size before any body is buffered (errors rule 2; RabbitMQ checks it once
the body is complete).
"""

from __future__ import annotations

from enum import Enum
from typing import Final, NoReturn, cast

from protocol.content_header import HeaderInfo, read_content_header
from protocol.errors import ChannelError, HardError, ReplyCode
from protocol.fastpath import BASIC_CLASS

# ?MAX_MSG_SIZE in rabbit.hrl: the hard cap whatever max_message_size is configured to (512 MiB).
MAX_MSG_SIZE: Final = 536_870_912
_PUBLISH: Final = (BASIC_CLASS, 40)  # the only content-bearing method a client sends

# What a completed publish hands to the session: (context given to expect(), parsed header, raw header payload
# kept for delivery, body).
Completed = tuple[object, HeaderInfo, bytes, bytes]


class AssemblerState(Enum):
    IDLE = "method"  # the names are process/2's states
    AWAIT_HEADER = "content_header"
    AWAIT_BODY = "content_body"


_IDLE: Final = AssemblerState.IDLE
_AWAIT_HEADER: Final = AssemblerState.AWAIT_HEADER
_AWAIT_BODY: Final = AssemblerState.AWAIT_BODY

# Allowed transitions, for tests and documentation; the methods below implement exactly these.
TRANSITIONS: Final[dict[AssemblerState, frozenset[AssemblerState]]] = {
    _IDLE: frozenset({_IDLE, _AWAIT_HEADER}),  # method without / with content
    _AWAIT_HEADER: frozenset({_IDLE, _AWAIT_BODY}),  # header with body_size 0 / > 0
    _AWAIT_BODY: frozenset({_IDLE, _AWAIT_BODY}),  # last / another body frame
}


def _unexpected(text: str, method: tuple[int, int] = (0, 0)) -> HardError:
    return HardError(ReplyCode.UNEXPECTED_FRAME, text, *method)


class ContentAssembler:
    """Collects the header and body frames that follow a content-bearing method on one channel.

    Per frame: a method frame -> ``on_method()`` (raises unless idle), then ``expect(ctx)`` if it was
    basic.publish; a header frame -> ``on_header``; a body frame -> ``on_body``. The last two return the
    completed ``(ctx, header_info, header_payload, body)`` once the body is whole, else None.

    When the size check fails the channel is closed (406) but the body frames the client already sent must not
    break the connection: the assembler swallows them (``discarding``) and then returns to IDLE.
    """

    __slots__ = (
        "_context",
        "_header",
        "_header_payload",
        "_parts",
        "_remaining",
        "discarding",
        "limit",
        "max_message_size",
        "state",
    )

    def __init__(self, max_message_size: int) -> None:
        self.max_message_size = max_message_size
        self.limit = min(max_message_size, MAX_MSG_SIZE)  # the largest body accepted
        self.state = _IDLE
        self.discarding = False
        self._context: object = None
        self._header: HeaderInfo | None = None
        self._header_payload = b""
        self._parts: list[bytes] = []
        self._remaining = 0

    @property
    def idle(self) -> bool:
        return self.state is _IDLE

    def reset(self) -> None:
        """Forget any content in progress (the channel was closed and reopened)."""
        self.state = _IDLE
        self.discarding = False
        self._context = self._header = None
        self._header_payload = b""
        self._parts = []

    def on_method(self) -> None:
        """A method frame arrived: only legal when idle (505 otherwise, on basic.publish)."""
        if self.state is _AWAIT_HEADER:
            raise _unexpected(
                "expected content header for class 60, got non content header frame instead", _PUBLISH
            )
        if self.state is _AWAIT_BODY:
            raise _unexpected("expected content body, got non content body frame instead", _PUBLISH)

    def expect(self, method: object) -> None:
        """A content-bearing method (basic.publish) was decoded; ``method`` comes back with its content."""
        if self.state is not _IDLE:
            self.on_method()
        self._context = method
        self.discarding = False
        self.state = _AWAIT_HEADER

    def on_header(self, payload: bytes) -> Completed | None:
        """A content-header frame. Checks class, weight and body size before any body arrives."""
        if self.state is not _AWAIT_HEADER:
            if self.state is _IDLE:
                raise _unexpected("expected method frame, got non method frame instead")
            raise _unexpected("expected content body, got non content body frame instead", _PUBLISH)
        info, payload = read_content_header(payload)
        size = info.body_size
        if size > self.limit:
            self._refuse(size)
        if not size:
            context = self._context
            self._context = None
            self.state = _IDLE
            return context, info, payload, b""
        self._header = info
        self._header_payload = payload
        self._remaining = size
        self.state = _AWAIT_BODY
        return None

    def _refuse(self, size: int) -> NoReturn:
        if size > MAX_MSG_SIZE:
            # process/2 in rabbit_command_assembler: the hard cap is a connection-level frame error.
            raise HardError(
                ReplyCode.FRAME_ERROR,
                f"content body size {size} exceeds maximum allowed size {MAX_MSG_SIZE}",
                *_PUBLISH,
            )
        # Swallow the body frames already on their way, then go idle (see the class docstring).
        self._remaining = size
        self.discarding = True
        self.state = _AWAIT_BODY
        # check_msg_size/2 in rabbit_channel: the short text when the configured limit is the hard cap itself.
        limit = "max size" if self.max_message_size == MAX_MSG_SIZE else "configured max size"
        raise ChannelError(
            ReplyCode.PRECONDITION_FAILED,
            f"message size {size} is larger than {limit} {self.max_message_size}",
            *_PUBLISH,
        )

    def on_body(self, payload: bytes) -> Completed | None:
        """A content-body frame; returns the completed content with its last frame."""
        if self.state is not _AWAIT_BODY:
            if self.state is _IDLE:
                raise _unexpected("expected method frame, got non method frame instead")
            raise _unexpected(
                "expected content header for class 60, got non content header frame instead", _PUBLISH
            )
        remaining = self._remaining - len(payload)
        if remaining < 0:
            raise HardError(
                ReplyCode.FRAME_ERROR, "content body frame exceeds remaining content size", *_PUBLISH
            )
        if remaining:
            self._remaining = remaining
            if not self.discarding:
                self._parts.append(payload)
            return None
        self.state = _IDLE
        if self.discarding:
            self.discarding = False
            self._context = None
            return None
        parts = self._parts
        if parts:
            parts.append(payload)
            body = b"".join(parts)
            self._parts = []
        else:
            body = payload  # the common single-frame body: no join, no copy
        completed = (self._context, cast(HeaderInfo, self._header), self._header_payload, body)
        self._context = self._header = None
        self._header_payload = b""
        return completed
