"""The AMQP 1.0 error conditions the codec raises, typed so that the session closes with the right one.

Part 2, 2.8.15 (amqp-error) and 2.8.16 (connection-error): a codec error carries the condition symbol and the
description that the close frame's error sends. Descriptions follow rabbit_amqp_reader where RabbitMQ 4 has
one for the same failure.
"""

from __future__ import annotations

from typing import Any, Final

from protocol.amqp10.types import Symbol

DECODE_ERROR: Final = Symbol("amqp:decode-error")
FRAME_SIZE_TOO_SMALL: Final = Symbol("amqp:frame-size-too-small")
INTERNAL_ERROR: Final = Symbol("amqp:internal-error")
NOT_ALLOWED: Final = Symbol("amqp:not-allowed")
NOT_IMPLEMENTED: Final = Symbol("amqp:not-implemented")
INVALID_FIELD: Final = Symbol("amqp:invalid-field")
RESOURCE_LIMIT_EXCEEDED: Final = Symbol("amqp:resource-limit-exceeded")
UNAUTHORIZED_ACCESS: Final = Symbol("amqp:unauthorized-access")
FRAMING_ERROR: Final = Symbol("amqp:connection:framing-error")
CONNECTION_FORCED: Final = Symbol("amqp:connection:forced")


class AMQP10Error(Exception):
    """An error the peer is told of in a close (or end, detach) frame: ``condition`` and ``description``."""

    def __init__(self, condition: Symbol, description: str) -> None:
        super().__init__(f"{condition}: {description}")
        self.condition = condition
        self.description = description


class DecodeError(AMQP10Error):
    """Bytes that are not a valid encoding of what was expected there (``amqp:decode-error``)."""

    def __init__(self, description: str) -> None:
        super().__init__(DECODE_ERROR, description)


class FramingError(AMQP10Error):
    """A frame header that cannot be valid (``amqp:connection:framing-error``): the stream has lost sync.

    ``frames`` holds the complete frames the same ``feed`` read before the bad one, which RabbitMQ's reader
    would have handled before failing.
    """

    def __init__(self, description: str) -> None:
        super().__init__(FRAMING_ERROR, description)
        self.frames: list[Any] = []


class ProtocolHeaderMismatch(Exception):
    """The peer's 8-octet protocol header is not one we accept here (part 2, 2.2): answer with the header we
    support and close the socket. ``header`` holds what the peer sent."""

    def __init__(self, header: bytes) -> None:
        super().__init__(f"unsupported protocol header {header!r}")
        self.header = header
        self.frames: list[Any] = []
