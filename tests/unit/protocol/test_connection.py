"""connection: server properties, SASL parsing, tune negotiation and the channel-0 state table."""

from __future__ import annotations

import pytest
from pamqp import commands, encode, frame
from pamqp.common import FieldTable

import broker
from protocol.connection import (
    EXPECTED,
    LOCALES,
    MECHANISMS,
    STOPPING,
    ConnectionState,
    access_refused_login,
    check_connection_method,
    connection_method_ignored,
    connection_start,
    negotiate_tune,
    parse_sasl_response,
    server_properties,
)
from protocol.errors import HardError, ReplyCode
from tests.rabbitmq_expected import CAPABILITIES

# -- server properties -----------------------------------------------------------------------------------


def test_capabilities_are_rabbitmqs_exact_table() -> None:
    capabilities = server_properties()["capabilities"]
    assert capabilities == CAPABILITIES


def test_server_properties_have_rabbitmqs_keys_and_encode_as_a_table() -> None:
    properties = server_properties(product="P", version="9.9.9", cluster_name="c@h")
    assert set(properties) == {
        "capabilities",
        "cluster_name",
        "copyright",
        "information",
        "platform",
        "product",
        "version",
        "warrenmq_version",
    }
    assert (properties["product"], properties["version"], properties["cluster_name"]) == ("P", "9.9.9", "c@h")
    assert "WarrenMQ" in properties["information"]
    assert properties["platform"].startswith("Python ")
    assert encode.field_table(properties)


def test_server_properties_default_to_the_emulated_rabbitmq_release() -> None:
    properties = server_properties()
    assert (properties["product"], properties["version"]) == ("RabbitMQ", "3.13.7")
    # protocol/ cannot import broker: its copy of the version must match the package's.
    assert properties["warrenmq_version"] == broker.__version__
    assert properties["information"].startswith(f"WarrenMQ {broker.__version__} emulating RabbitMQ 3.13.7")


def test_connection_start_keeps_rabbitmqs_capability_order() -> None:
    # rabbit_reader:server_capabilities/1's list order, inside top-level keys sorted by server_properties/1;
    # pamqp's encoder would sort the capabilities too (checked frame by frame by tests/compat/frames).
    properties = server_properties()
    frame_bytes = connection_start(properties, MECHANISMS.decode(), LOCALES.decode())
    _, _, start = frame.unmarshal(frame_bytes)
    assert isinstance(start, commands.Connection.Start)
    assert start.server_properties == properties
    assert list(start.server_properties) == sorted(properties)
    capabilities = frame_bytes[frame_bytes.index(b"capabilities") :]
    order = [capabilities.index(name.encode()) for name in RABBITMQ_CAPABILITY_ORDER]
    assert order == sorted(order)
    assert (start.mechanisms, start.locales) == ("AMQPLAIN PLAIN", "en_US")


RABBITMQ_CAPABILITY_ORDER = (
    "publisher_confirms",
    "exchange_exchange_bindings",
    "basic.nack",
    "consumer_cancel_notify",
    "connection.blocked",
    "consumer_priorities",
    "authentication_failure_close",
    "per_consumer_qos",
    "direct_reply_to",
)


def test_mechanisms_and_locales() -> None:
    assert (MECHANISMS, LOCALES) == (b"AMQPLAIN PLAIN", b"en_US")


# -- SASL ------------------------------------------------------------------------------------------------


def test_plain_response() -> None:
    assert parse_sasl_response("PLAIN", b"\x00guest\x00secret") == ("guest", "secret")
    assert parse_sasl_response("PLAIN", "\x00ünï\x00pässword") == ("ünï", "pässword")
    assert parse_sasl_response("PLAIN", b"\x00\x00") == ("", "")


@pytest.mark.parametrize(
    "response", [b"guest\x00guest", b"authz\x00guest\x00guest", b"\x00guest", b"\x00a\x00b\x00c", b""]
)
def test_malformed_plain_response_is_syntax_error(response: bytes) -> None:
    # rabbit_auth_mechanism_plain:extract_user_pass/1 wants an empty authzid and nothing after the password.
    with pytest.raises(HardError) as raised:
        parse_sasl_response("PLAIN", response)
    assert raised.value.code is ReplyCode.SYNTAX_ERROR
    assert raised.value.text.startswith("response <<")
    assert raised.value.text.endswith(">> invalid")
    assert (raised.value.class_id, raised.value.method_id) == (10, 11)


def test_plain_error_text_renders_the_response_like_erlang() -> None:
    with pytest.raises(HardError) as raised:
        parse_sasl_response("PLAIN", b"guest")
    assert raised.value.reply_text == 'SYNTAX_ERROR - response <<"guest">> invalid'


def amqplain(table: FieldTable) -> bytes:
    return encode.field_table(table)[4:]  # AMQPLAIN omits the table's length prefix


def test_amqplain_response() -> None:
    assert parse_sasl_response("AMQPLAIN", amqplain({"LOGIN": "guest", "PASSWORD": "pw"})) == ("guest", "pw")


def test_amqplain_missing_password_is_syntax_error() -> None:
    with pytest.raises(HardError) as raised:
        parse_sasl_response("AMQPLAIN", amqplain({"LOGIN": "guest"}))
    assert raised.value.code is ReplyCode.SYNTAX_ERROR
    assert raised.value.text == (
        "AMQPLAIN auth info [{<<76,79,71,73,78>>,longstr,<<103,117,101,115,116>>}] "
        "is missing LOGIN or PASSWORD field"
    )


def test_amqplain_with_non_string_credentials_is_syntax_error() -> None:
    with pytest.raises(HardError, match="uses unsupported type for LOGIN or PASSWORD field"):
        parse_sasl_response("AMQPLAIN", amqplain({"LOGIN": 1, "PASSWORD": 2}))


def test_unparseable_amqplain_is_syntax_error() -> None:
    with pytest.raises(HardError) as raised:
        parse_sasl_response("AMQPLAIN", b"\x05LOGIN?")
    assert raised.value.code is ReplyCode.SYNTAX_ERROR


@pytest.mark.parametrize(
    ("mechanism", "text"),
    [
        ("CRAM-MD5", "unknown authentication mechanism 'CRAM-MD5'"),
        ("EXTERNAL", "invalid authentication mechanism 'EXTERNAL'"),
        ("plain", "unknown authentication mechanism 'plain'"),
    ],
)
def test_unsupported_mechanism_is_command_invalid(mechanism: str, text: str) -> None:
    with pytest.raises(HardError) as raised:
        parse_sasl_response(mechanism, b"\x00a\x00b")
    assert (raised.value.code, raised.value.text) == (ReplyCode.COMMAND_INVALID, text)


def test_access_refused_text_is_the_authentication_failure_close_one() -> None:
    error = access_refused_login("AMQPLAIN")
    assert error.reply_text == (
        "ACCESS_REFUSED - Login was refused using authentication mechanism AMQPLAIN. "
        "For details see the broker logfile."
    )
    assert (error.class_id, error.method_id) == (0, 0)


# -- tune ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "server", "effective"),
    [
        ((131072, 2047, 60), (131072, 2047, 60), (131072, 2047, 60)),
        ((4096, 1, 0), (131072, 2047, 60), (4096, 1, 0)),  # the client may ask for less, and for no heartbeat
        ((65536, 100, 600), (131072, 2047, 60), (65536, 100, 600)),  # its heartbeat is final, even above ours
        ((0, 0, 30), (0, 0, 60), (0, 0, 30)),  # 0 = no limit, allowed when the server has none either
        ((1 << 20, 65535, 5), (0, 0, 60), (1 << 20, 65535, 5)),
    ],
)
def test_tune_ok_values_are_adopted_when_valid(
    client: tuple[int, int, int], server: tuple[int, int, int], effective: tuple[int, int, int]
) -> None:
    assert negotiate_tune(*client, *server) == effective


@pytest.mark.parametrize(
    ("client", "text"),
    [
        (
            (131073, 2047, 60),
            "negotiated frame_max = 131073 is higher than the maximum allowed value (131072)",
        ),
        ((0, 2047, 60), "negotiated frame_max = 0 is higher than the maximum allowed value (131072)"),
        ((4095, 2047, 60), "negotiated frame_max = 4095 is lower than the minimum allowed value (4096)"),
        ((131072, 2048, 60), "negotiated channel_max = 2048 is higher than the maximum allowed value (2047)"),
        (
            (131072, 0, 60),
            "negotiated channel_max = 0 (no limit) is higher than the maximum allowed value (2047)",
        ),
    ],
)
def test_tune_ok_outside_the_limits_is_not_allowed(client: tuple[int, int, int], text: str) -> None:
    with pytest.raises(HardError) as raised:
        negotiate_tune(*client, 131072, 2047, 60)
    assert (raised.value.code, raised.value.text) == (ReplyCode.NOT_ALLOWED, text)
    assert (raised.value.class_id, raised.value.method_id) == (10, 30)  # 'connection.tune'


def test_frame_max_is_checked_before_channel_max() -> None:
    with pytest.raises(HardError, match="frame_max"):
        negotiate_tune(1, 0, 0, 131072, 2047, 60)


# -- states ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "method"),
    [
        (ConnectionState.AWAITING_START_OK, "Connection.StartOk"),
        (ConnectionState.AWAITING_SECURE_OK, "Connection.SecureOk"),
        (ConnectionState.AWAITING_TUNE_OK, "Connection.TuneOk"),
        (ConnectionState.AWAITING_OPEN, "Connection.Open"),
        (ConnectionState.OPEN, "Connection.Close"),
        (ConnectionState.OPEN, "Connection.UpdateSecret"),
    ],
)
def test_expected_methods_pass(state: ConnectionState, method: str) -> None:
    check_connection_method(state, method)
    assert not connection_method_ignored(state, method)


@pytest.mark.parametrize(
    ("state", "method", "state_name", "ids"),
    [
        (ConnectionState.AWAITING_START_OK, "Connection.TuneOk", "starting", (10, 31)),
        (ConnectionState.AWAITING_START_OK, "Connection.Close", "starting", (10, 50)),
        (ConnectionState.AWAITING_TUNE_OK, "Connection.Open", "tuning", (10, 40)),
        (ConnectionState.AWAITING_OPEN, "Connection.StartOk", "opening", (10, 11)),
        (ConnectionState.OPEN, "Connection.CloseOk", "running", (10, 51)),
        (ConnectionState.OPEN, "Basic.Publish", "running", (60, 40)),
    ],
)
def test_unexpected_methods_are_channel_errors_naming_the_state(
    state: ConnectionState, method: str, state_name: str, ids: tuple[int, int]
) -> None:
    with pytest.raises(HardError) as raised:
        check_connection_method(state, method)
    assert raised.value.reply_text == f"CHANNEL_ERROR - unexpected method in connection state {state_name}"
    assert (raised.value.class_id, raised.value.method_id) == ids


@pytest.mark.parametrize("state", sorted(STOPPING, key=str))
def test_stopping_states_drop_other_methods_silently(state: ConnectionState) -> None:
    check_connection_method(state, "Channel.Open")
    assert connection_method_ignored(state, "Channel.Open")
    assert not connection_method_ignored(state, "Connection.Close")


def test_every_state_has_a_row() -> None:
    assert set(EXPECTED) == set(ConnectionState)
    assert EXPECTED[ConnectionState.CLOSED] == {"Connection.Close", "Connection.CloseOk"}
