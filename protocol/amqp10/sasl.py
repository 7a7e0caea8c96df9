"""The SASL frames' bodies (part 5, 5.3.3): mechanisms, init, challenge, response and outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from protocol.amqp10.composite import CompositeType, amqp, composite, decode_composite
from protocol.amqp10.errors import DecodeError
from protocol.amqp10.types import Symbol

# sasl-code (5.3.3.6).
SASL_OK: Final = 0
SASL_AUTH: Final = 1
SASL_SYS: Final = 2
SASL_SYS_PERM: Final = 3
SASL_SYS_TEMP: Final = 4


@composite(0x40, "amqp:sasl-mechanisms:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class SaslMechanisms(CompositeType):
    sasl_server_mechanisms: tuple[Symbol, ...] = amqp("symbols")


@composite(0x41, "amqp:sasl-init:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class SaslInit(CompositeType):
    mechanism: Symbol = amqp("symbol")
    initial_response: bytes | None = amqp("binary", None)
    hostname: str | None = amqp("string", None)


@composite(0x42, "amqp:sasl-challenge:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class SaslChallenge(CompositeType):
    challenge: bytes = amqp("binary")


@composite(0x43, "amqp:sasl-response:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class SaslResponse(CompositeType):
    response: bytes = amqp("binary")


@composite(0x44, "amqp:sasl-outcome:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class SaslOutcome(CompositeType):
    code: int = amqp("ubyte")
    additional_data: bytes | None = amqp("binary", None)


SaslFrame = SaslMechanisms | SaslInit | SaslChallenge | SaslResponse | SaslOutcome
_SASL_FRAMES: Final = (SaslMechanisms, SaslInit, SaslChallenge, SaslResponse, SaslOutcome)


def decode_sasl(body: bytes) -> SaslFrame:
    """The SASL frame body ``body`` (nothing may follow it)."""
    frame, end = decode_composite(body)
    if not isinstance(frame, _SASL_FRAMES):
        raise DecodeError(f"frame body is not a SASL frame: {frame!r}")
    if end != len(body):
        raise DecodeError(f"{len(body) - end} octets after the SASL frame")
    return frame
