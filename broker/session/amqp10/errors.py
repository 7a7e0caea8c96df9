"""The errors an AMQP 1.0 connection answers with, by the scope they end (part 2, 2.8.14 and 2.8.15): a
link's detach, a session's end, the connection's close; and the core's refusals in 1.0's conditions."""

from __future__ import annotations

from typing import Final

from protocol.amqp10.condition import Error
from protocol.amqp10.types import Symbol
from protocol.errors import AMQPError, ReplyCode

NOT_FOUND: Final = "amqp:not-found"
UNAUTHORIZED_ACCESS: Final = "amqp:unauthorized-access"
PRECONDITION_FAILED: Final = "amqp:precondition-failed"
RESOURCE_LOCKED: Final = "amqp:resource-locked"
INVALID_FIELD: Final = "amqp:invalid-field"
INTERNAL_ERROR: Final = "amqp:internal-error"
NOT_IMPLEMENTED: Final = "amqp:not-implemented"
DECODE_ERROR: Final = "amqp:decode-error"
ILLEGAL_STATE: Final = "amqp:illegal-state"
UNATTACHED_HANDLE: Final = "amqp:session:unattached-handle"
FRAMING_ERROR: Final = "amqp:connection:framing-error"
MESSAGE_SIZE_EXCEEDED: Final = "amqp:link:message-size-exceeded"
RESOURCE_LIMIT_EXCEEDED: Final = "amqp:resource-limit-exceeded"

# rabbit_amqp_session's mapping of the 0-9-1 reply codes the core raises (rabbit_amqp_util:protocol_error).
_CONDITIONS: Final[dict[int, str]] = {
    ReplyCode.NOT_FOUND: NOT_FOUND,
    ReplyCode.ACCESS_REFUSED: UNAUTHORIZED_ACCESS,
    ReplyCode.PRECONDITION_FAILED: PRECONDITION_FAILED,
    ReplyCode.RESOURCE_LOCKED: RESOURCE_LOCKED,
    ReplyCode.NOT_IMPLEMENTED: NOT_IMPLEMENTED,
}


class Amqp10Failure(Exception):
    """An error that ends a link, a session or the connection: its condition and description."""

    def __init__(self, condition: str, description: str) -> None:
        super().__init__(description)
        self.condition = condition
        self.description = description

    def error(self) -> Error:
        return Error(condition=Symbol(self.condition), description=self.description)


class LinkError(Amqp10Failure):
    """Detach the link with this error (closed=true)."""


class SessionError(Amqp10Failure):
    """End the session with this error."""


class ConnectionError(Amqp10Failure):
    """Close the connection with this error."""


def condition_of(error: AMQPError) -> str:
    """The 1.0 condition of a core refusal (a 0-9-1 reply code)."""
    return _CONDITIONS.get(error.code, INTERNAL_ERROR)
