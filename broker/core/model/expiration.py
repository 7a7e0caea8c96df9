"""Per-message `expiration` property parsing with RabbitMQ's validation and error texts (rabbit_basic.erl)."""

from __future__ import annotations

import re

from protocol.errors import ChannelError, ReplyCode

# rabbit.hrl ?MAX_EXPIRY_TIMER: the largest TTL an Erlang timer accepts.
MAX_EXPIRY_MS = 4294967295
# string:to_integer/1: an optional sign then digits; whatever follows is the leftover string.
_LEADING_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_expiration(expiration: str) -> int:
    """Milliseconds, or 406 "invalid expiration '…': <reason>" with the reason printed as Erlang's ~p does."""
    match = _LEADING_INTEGER.match(expiration)
    if match is None:
        reason = "no_integer"
    elif match.end() != len(expiration):
        leftover = expiration[match.end() :].replace("\\", "\\\\").replace('"', '\\"')
        reason = f'{{leftover_string,"{leftover}"}}'
    else:
        value = int(match.group())
        if value < 0:
            reason = f"{{value_negative,{value}}}"
        elif value > MAX_EXPIRY_MS:
            reason = f"{{value_too_large,{value}}}"
        else:
            return value
    raise ChannelError(ReplyCode.PRECONDITION_FAILED, f"invalid expiration '{expiration}': {reason}")
