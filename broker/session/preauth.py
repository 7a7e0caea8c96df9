"""Which errors RabbitMQ answers with silence before a connection is open (rabbit_reader:handle_exception/3).

Before connection.open-ok, rabbit_reader sends a connection.close only for: a refused login when the client
advertised ``authentication_failure_close`` (403), and, once tune-ok is handled (state ``opening``), an error
whose reason is a bare ``#amqp_error{}``: frame errors (501 frame_too_large, bad frame end), 505 unexpected
frames, and the open handler's own refusals (530 vhost not found, 504 unexpected method). Everything else
falls into its last clause: it sleeps ``?SILENT_CLOSE_DELAY`` (3 s, "so they can't DOS us with repeated failed
logins") and drops the socket without a reply. That covers every error in states ``starting``, ``securing``
and ``tuning`` (oversized frames, undecodable field tables, a truncated long string, SASL syntax errors,
tune-ok values out of range: fail_negotiation/4 names its method, so its not_allowed never matches the tuning
clause), and a channel-0 method whose fields cannot be decoded in ``opening`` (decode_method_fields fails with
the method's name attached, which handle_method0/3 passes on as a plain tuple). Checked against RabbitMQ 3.10
(tests/compat/frames/scenarios_preauth.py); 3.13 and 4.x have the same clauses.
"""

from __future__ import annotations

from typing import Final

from protocol.connection import ConnectionState
from protocol.errors import AMQPError, HardError, ReplyCode

# rabbit_reader's ?SILENT_CLOSE_DELAY.
SILENT_CLOSE_DELAY_S: Final = 3.0
_SILENT_STATES: Final = frozenset(
    {ConnectionState.AWAITING_START_OK, ConnectionState.AWAITING_SECURE_OK, ConnectionState.AWAITING_TUNE_OK}
)


# Where a refused login is answered (rabbit_reader's states starting and securing).
LOGIN_STATES: Final = frozenset({ConnectionState.AWAITING_START_OK, ConnectionState.AWAITING_SECURE_OK})


class UndecodableBeforeOpen(HardError):
    """A channel-0 method whose fields could not be decoded before the connection was open."""


def undecodable(state: ConnectionState, error: HardError) -> HardError:
    """The error to raise for a channel-0 method that failed to decode in ``state``."""
    if state in _SILENT_STATES or state is ConnectionState.AWAITING_OPEN:
        return UndecodableBeforeOpen(error.code, error.text, error.class_id, error.method_id)
    return error


def closes_silently(state: ConnectionState, error: AMQPError) -> bool:
    """True when RabbitMQ would drop the socket without a close frame for ``error`` in ``state``."""
    if isinstance(error, UndecodableBeforeOpen):
        return True
    return state in _SILENT_STATES and error.code is not ReplyCode.ACCESS_REFUSED
