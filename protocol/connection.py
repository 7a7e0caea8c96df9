"""Pure helpers for the connection handshake as RabbitMQ's rabbit_reader.erl does it; the session drives it.

Source: deps/rabbit/src/rabbit_reader.erl (server_properties/1, server_capabilities/1, handle_method0/2,
validate_negotiated_integer_value/3, fail_negotiation/4, auth_mechanism_to_module/2, auth_fail/5) and the SASL
modules rabbit_auth_mechanism_plain.erl / rabbit_auth_mechanism_amqplain.erl.
"""

from __future__ import annotations

import struct
import sys
from enum import Enum
from typing import Any, Final

from protocol.codec import METHOD_INDEX
from protocol.erlang_terms import binary_tp, binary_w
from protocol.errors import HardError, ReplyCode
from protocol.field_table import FieldTableError, decode_table
from protocol.header_rewrite import encode_table

# WarrenMQ's own version (broker/__init__.py holds the same; protocol/ imports nothing of broker).
WARRENMQ_VERSION: Final = "0.1.0"
# What connection.start reports by default: the release the default profile (rabbitmq-3.13) emulates.
PRODUCT: Final = "RabbitMQ"
PRODUCT_VERSION: Final = "3.13.7"
# RabbitMQ offers the mechanisms of its registry; the order is not stable across releases (3.10 and 3.13:
# "AMQPLAIN PLAIN", 4.0.5: "ANONYMOUS PLAIN AMQPLAIN"; the profile says which). Clients pick by name; strict
# ones compare the string.
MECHANISMS: Final = b"AMQPLAIN PLAIN"
LOCALES: Final = b"en_US"
FRAME_MIN_SIZE: Final = 4096  # ?FRAME_MIN_SIZE: the least frame_max a client may ask for
CHANNEL_MIN: Final = 1  # ?CHANNEL_MIN in rabbit_reader.erl

# Start-ok fails on class 10 method 11: handle_method0/2 stamps the method on errors raised while handling it.
_START_OK: Final = (10, 11)
_TUNE: Final = (10, 30)  # fail_negotiation/4 names 'connection.tune'
_START_IDS: Final = b"\x00\x0a\x00\x0a\x00\x09"  # connection.start (10, 10), version 0-9
# Mechanisms RabbitMQ knows (its registry atoms exist) but does not offer here: "invalid", not "unknown".
_KNOWN_MECHANISMS: Final = frozenset({"ANONYMOUS", "EXTERNAL", "RABBIT-CR-DEMO"})
# RabbitMQ 4's ANONYMOUS logs in as anonymous_login_user with anonymous_login_pass (both guest by default;
# rabbit_auth_mechanism_anonymous ignores the response), so guest's loopback restriction applies to it.
ANONYMOUS_LOGIN: Final = ("guest", "guest")


def server_properties(
    product: str = PRODUCT, version: str = PRODUCT_VERSION, cluster_name: str = "rabbit@localhost"
) -> dict[str, Any]:
    """connection.start server-properties with RabbitMQ's keys and its exact 0-9-1 capabilities table.

    ``product``/``version`` are what clients branch on (e.g. a client falls back to pre-3.3.5 behaviour
    below that version), so by default they name the RabbitMQ release being emulated; ``information``
    and the extra ``warrenmq_version`` say what actually answers.
    """
    if product == "WarrenMQ":
        information = "Licensed under the Apache License 2.0. An AMQP 0-9-1 broker that acts like RabbitMQ."
    else:
        information = (
            f"WarrenMQ {WARRENMQ_VERSION} emulating {product} {version}. "
            "Licensed under the Apache License 2.0."
        )
    return {
        "capabilities": {
            "publisher_confirms": True,
            "exchange_exchange_bindings": True,
            "basic.nack": True,
            "consumer_cancel_notify": True,
            "connection.blocked": True,
            "consumer_priorities": True,
            "authentication_failure_close": True,
            "per_consumer_qos": True,
            "direct_reply_to": True,
        },
        "cluster_name": cluster_name,
        "copyright": "Copyright (c) WarrenMQ contributors",
        "information": information,
        # RabbitMQ: rabbit_misc:platform_and_version() = "Erlang/OTP 26.2.5".
        "platform": f"Python {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}",
        "product": product,
        "version": version,
        "warrenmq_version": WARRENMQ_VERSION,
    }


def connection_start(server_properties_table: dict[str, Any], mechanisms: str, locales: str) -> bytes:
    """The connection.start frame with server-properties in the order given, nested tables included: RabbitMQ
    sorts the top-level keys (server_properties/1's usort) but sends the capabilities table in
    server_capabilities/1's order; pamqp's encoder would sort every table."""
    table = encode_table(server_properties_table)
    payload = (
        _START_IDS
        + struct.pack("!I", len(table))
        + table
        + struct.pack("!I", len(mechanisms))
        + mechanisms.encode()
        + struct.pack("!I", len(locales))
        + locales.encode()
    )
    return struct.pack("!BHI", 1, 0, len(payload)) + payload + b"\xce"


# -- SASL ------------------------------------------------------------------------------------------------


def _syntax_error(text: str) -> HardError:
    # auth_phase/2: {protocol_error, Msg, Args} -> rabbit_misc:protocol_error(syntax_error, Msg, Args).
    return HardError(ReplyCode.SYNTAX_ERROR, text, *_START_OK)


def parse_sasl_response(
    mechanism: str, response: bytes | str, offered: str = MECHANISMS.decode()
) -> tuple[str, str]:
    """``(username, password)`` from a start-ok response (pamqp hands longstr back as ``str`` if UTF-8) for a
    mechanism connection.start ``offered``.

    PLAIN is ``\\0user\\0pass``: RabbitMQ's extract_user_pass/1 wants the authzid empty and nothing after
    the password, else 502 ``response <<...>> invalid``. AMQPLAIN is a field table without its length
    prefix holding LOGIN and PASSWORD. Unknown mechanism -> 503 ``unknown authentication mechanism 'X'``.
    """
    raw = response.encode() if isinstance(response, str) else bytes(response)
    if mechanism not in offered.split():
        reason = "invalid" if mechanism in _KNOWN_MECHANISMS else "unknown"
        raise HardError(
            ReplyCode.COMMAND_INVALID, f"{reason} authentication mechanism '{mechanism}'", *_START_OK
        )
    if mechanism == "PLAIN":
        parts = raw.split(b"\x00")
        if len(parts) != 3 or parts[0]:
            raise _syntax_error(f"response {binary_tp(raw)} invalid")
        return parts[1].decode("utf-8", "replace"), parts[2].decode("utf-8", "replace")
    if mechanism == "ANONYMOUS":
        return ANONYMOUS_LOGIN
    return _parse_amqplain(raw)


def _parse_amqplain(raw: bytes) -> tuple[str, str]:
    try:
        table = decode_table(struct.pack("!I", len(raw)) + raw)
    except (FieldTableError, UnicodeDecodeError):
        # RabbitMQ's parse_table/1 crashes on such input and the reader drops the connection.
        raise _syntax_error(f"AMQPLAIN auth info {binary_w(raw[:64])} could not be parsed") from None
    login, password = table.get("LOGIN"), table.get("PASSWORD")
    if login is None or password is None:
        raise _syntax_error(f"AMQPLAIN auth info {_erlang_table(table)} is missing LOGIN or PASSWORD field")
    # The guard in rabbit_auth_mechanism_amqplain accepts the pair when either of them is a string.
    if not isinstance(login, (str, bytes, bytearray)) and not isinstance(password, (str, bytes, bytearray)):
        raise _syntax_error(
            f"AMQPLAIN auth info {_erlang_table(table)} uses unsupported type for LOGIN or PASSWORD field"
        )
    return _text(login), _text(password)


def _text(value: object) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _erlang_table(table: dict[str, Any]) -> str:
    """Approximates ``~w`` of RabbitMQ's parsed table ``[{Name, Type, Value}]`` (types guessed)."""
    items = []
    for key, value in table.items():
        if isinstance(value, bool):
            kind, rendered = "bool", str(value).lower()
        elif isinstance(value, int):
            kind, rendered = "long", str(value)
        elif isinstance(value, str):
            kind, rendered = "longstr", binary_w(value.encode())
        elif isinstance(value, (bytes, bytearray)):
            kind, rendered = "binary", binary_w(bytes(value))
        else:
            kind, rendered = type(value).__name__, "..."
        items.append(f"{{{binary_w(key.encode())},{kind},{rendered}}}")
    return "[" + ",".join(items) + "]"


def access_refused_login(mechanism: str) -> HardError:
    """auth_fail/5 with the ``authentication_failure_close`` capability: the "safe" 403 text. The close
    frame is built from an error whose method is ``none``, hence class/method 0."""
    return HardError(
        ReplyCode.ACCESS_REFUSED,
        f"Login was refused using authentication mechanism {mechanism}. For details see the broker logfile.",
    )


# -- tune ------------------------------------------------------------------------------------------------


def _validate(field: str, minimum: int, client: int, server: int) -> None:
    # validate_negotiated_integer_value/3, fail_negotiation/4; get_client_value_detail/2 adds " (no limit)".
    detail = " (no limit)" if field == "channel_max" and client == 0 else ""
    if client != 0 and client < minimum:
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"negotiated {field} = {client}{detail} is lower than the minimum allowed value ({minimum})",
            *_TUNE,
        )
    if server != 0 and (client == 0 or client > server):
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"negotiated {field} = {client}{detail} is higher than the maximum allowed value ({server})",
            *_TUNE,
        )


def negotiate_tune(
    client_frame_max: int,
    client_channel_max: int,
    client_heartbeat: int,
    server_frame_max: int,
    server_channel_max: int,
    server_heartbeat: int,
) -> tuple[int, int, int]:
    """Validate tune-ok like rabbit_reader and return the effective ``(frame_max, channel_max, heartbeat_s)``.

    The client decides: RabbitMQ adopts the tune-ok values as they are once they pass the checks. A value
    above the server's maximum, or 0 ("no limit") while the server has one, is 530 NOT_ALLOWED; frame_max
    below 4096 is 530 too; 0 is accepted only when the server's own maximum is 0. The heartbeat is never
    checked: the client's tune-ok value (0 = off) is final, ``server_heartbeat`` was only the suggestion
    sent in connection.tune.
    """
    del server_heartbeat  # a suggestion only, see above
    _validate("frame_max", FRAME_MIN_SIZE, client_frame_max, server_frame_max)
    _validate("channel_max", CHANNEL_MIN, client_channel_max, server_channel_max)
    return client_frame_max, client_channel_max, client_heartbeat


# -- connection states -----------------------------------------------------------------------------------


class ConnectionState(Enum):
    """The states of rabbit_reader's ``connection_state`` for 0-9-1 (pre_init, starting, securing, tuning,
    opening, running, closing, closed)."""

    AWAITING_PROTOCOL_HEADER = "pre_init"
    AWAITING_START_OK = "starting"
    AWAITING_SECURE_OK = "securing"
    AWAITING_TUNE_OK = "tuning"
    AWAITING_OPEN = "opening"
    OPEN = "running"
    CLOSING = "closing"
    CLOSED = "closed"


# The channel-0 methods handle_method0/2 accepts in each state.
EXPECTED: Final[dict[ConnectionState, frozenset[str]]] = {
    ConnectionState.AWAITING_PROTOCOL_HEADER: frozenset(),
    ConnectionState.AWAITING_START_OK: frozenset({"Connection.StartOk"}),
    ConnectionState.AWAITING_SECURE_OK: frozenset({"Connection.SecureOk"}),
    ConnectionState.AWAITING_TUNE_OK: frozenset({"Connection.TuneOk"}),
    ConnectionState.AWAITING_OPEN: frozenset({"Connection.Open"}),
    ConnectionState.OPEN: frozenset({"Connection.Close", "Connection.UpdateSecret"}),
    # Closing (the client sent close): another close is answered with close-ok.
    ConnectionState.CLOSING: frozenset({"Connection.Close"}),
    # Closed (we sent close): close is answered with close-ok, close-ok ends the connection.
    ConnectionState.CLOSED: frozenset({"Connection.Close", "Connection.CloseOk"}),
}
# ?IS_STOPPING: in these states handle_method0/2 silently drops every other method.
STOPPING: Final = frozenset({ConnectionState.CLOSING, ConnectionState.CLOSED})


def connection_method_ignored(state: ConnectionState, method_name: str) -> bool:
    """True when RabbitMQ drops this channel-0 method without error (closing/closed, not close/close-ok)."""
    return state in STOPPING and method_name not in EXPECTED[state]


def check_connection_method(state: ConnectionState, method_name: str) -> None:
    """Raise 504 CHANNEL_ERROR ``unexpected method in connection state running`` (on the offending
    method) for a channel-0 method the state does not expect; in closing/closed states nothing raises (see
    ``connection_method_ignored``)."""
    if method_name in EXPECTED[state] or state in STOPPING:
        return
    index = METHOD_INDEX.get(method_name, 0)
    raise HardError(
        ReplyCode.CHANNEL_ERROR,
        f"unexpected method in connection state {state.value}",
        index >> 16,
        index & 0xFFFF,
    )
