"""Frame-level differential checks (issue 26): reserved fields and the failing-method ids of every close are
compared byte for byte with RabbitMQ's, on raw frames (pamqp and pika forgive both).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from pamqp import commands
from pamqp.base import Frame
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

from tests.integration.helpers import SocketClosed

from .wire_frames import FRAME_HEARTBEAT, WireClient, WireFrame, close_ids

pytestmark = pytest.mark.compat

CHANNEL_OPEN_OK = b"\x00\x14\x00\x0b" + b"\x00\x00\x00\x00"  # 20/11 and an empty long string


def _opened(url: str) -> WireClient:
    client = WireClient.connect(url)
    client.handshake()
    client.send(commands.Channel.Open(), 1)
    client.method_frame()
    return client


def _method_bytes(channel: int, payload: bytes) -> bytes:
    return struct.pack("!BHI", 1, channel, len(payload)) + payload + b"\xce"


def _publish(
    client: WireClient,
    exchange: str,
    routing_key: str = "k",
    properties: commands.Basic.Properties | None = None,
) -> None:
    client.send(commands.Basic.Publish(exchange=exchange, routing_key=routing_key), 1)
    client.send(ContentHeader(0, 1, properties or commands.Basic.Properties()), 1)
    client.send(ContentBody(b"x"), 1)


def _reply(url: str, action: Callable[[WireClient], None]) -> WireFrame:
    """The first method frame the broker answers ``action`` with, on a fresh connection and channel 1."""
    client = _opened(url)
    try:
        action(client)
        return client.method_frame()
    finally:
        client.close()


# -- reserved fields ---------------------------------------------------------------------------------------


def test_channel_open_ok_carries_an_empty_long_string_as_rabbitmq(rabbitmq_url: str, amqp_url: str) -> None:
    payloads = []
    for url in (rabbitmq_url, amqp_url):
        client = WireClient.connect(url)
        try:
            client.handshake()
            client.send(commands.Channel.Open(), 7)
            frame = client.method_frame()
        finally:
            client.close()
        assert frame.channel == 7
        payloads.append(frame.payload)
    assert payloads == [CHANNEL_OPEN_OK, CHANNEL_OPEN_OK]


def _connection_open_ok(url: str) -> bytes:
    client = WireClient.connect(url)
    try:
        client.send_header()
        client.start_ok()
        client.tune_ok()
        client.send(commands.Connection.Open(virtual_host="/"))
        return client.method_frame().payload
    finally:
        client.close()


def _access_request(client: WireClient) -> None:
    # access.request is absent from pamqp: realm "/data", active/write/read bits set (as old clients send it).
    client.send_bytes(_method_bytes(1, b"\x00\x1e\x00\x0a\x05/data\x1c"))


def _get_empty(client: WireClient) -> None:
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    client.method_frame()
    client.send(commands.Basic.Get(queue=""), 1)


@pytest.mark.parametrize(
    "action",
    [_access_request, _get_empty],
    ids=["access.request-ok ticket", "basic.get-empty cluster-id"],
)
def test_reserved_fields_of_replies_are_rabbitmqs_bytes(
    rabbitmq_url: str, amqp_url: str, action: Callable[[WireClient], None]
) -> None:
    expected = _reply(rabbitmq_url, action)
    observed = _reply(amqp_url, action)
    assert (observed.ids, observed.payload) == (expected.ids, expected.payload)


def test_connection_open_ok_known_hosts_is_rabbitmqs_bytes(rabbitmq_url: str, amqp_url: str) -> None:
    assert _connection_open_ok(amqp_url) == _connection_open_ok(rabbitmq_url) == b"\x00\x0a\x00\x29\x00"


# -- the failing method's ids in every close ---------------------------------------------------------------


def _after(prepare: Frame, act: Callable[[WireClient], None]) -> Callable[[WireClient], None]:
    def both(client: WireClient) -> None:
        client.send(prepare, 1)
        client.method_frame()
        act(client)

    return both


def _send(method: Frame) -> Callable[[WireClient], None]:
    return lambda client: client.send(method, 1)


REFUSALS: dict[str, Callable[[WireClient], None]] = {
    "publish to a missing exchange": lambda client: _publish(client, "fidelity-missing"),
    "publish to an internal exchange": _after(
        commands.Exchange.Declare(exchange="fidelity-internal", exchange_type="fanout", internal=True),
        lambda client: _publish(client, "fidelity-internal"),
    ),
    "publish with an invalid expiration": lambda client: _publish(
        client, "", properties=commands.Basic.Properties(expiration="soon")
    ),
    "publish with reply-to but no reply consumer": lambda client: _publish(
        client, "", properties=commands.Basic.Properties(reply_to="amq.rabbitmq.reply-to")
    ),
    "bad user_id to a missing exchange": lambda client: _publish(
        client, "fidelity-missing", properties=commands.Basic.Properties(user_id="someone-else")
    ),
    "publish in a transaction to a missing exchange": _after(
        commands.Tx.Select(), lambda client: _publish(client, "fidelity-missing")
    ),
    "basic.ack of an unknown tag": _send(commands.Basic.Ack(delivery_tag=7)),
    "basic.ack multiple of an unknown tag": _send(commands.Basic.Ack(delivery_tag=7, multiple=True)),
    "basic.nack of an unknown tag": _send(commands.Basic.Nack(delivery_tag=7)),
    "basic.reject of an unknown tag": _send(commands.Basic.Reject(delivery_tag=7)),
    "basic.ack of an unknown tag in a transaction": _after(
        commands.Tx.Select(), _send(commands.Basic.Ack(delivery_tag=7))
    ),
    "basic.consume of a missing queue": _send(commands.Basic.Consume(queue="fidelity-missing")),
    "tx.commit without tx.select": _send(commands.Tx.Commit()),
    "confirm.select in a transaction": _after(commands.Tx.Select(), _send(commands.Confirm.Select())),
    "exchange.bind with both ends missing": _send(
        commands.Exchange.Bind(destination="fidelity-dest", source="fidelity-source")
    ),
    "channel.close-ok on an open channel": _send(commands.Channel.CloseOk()),
}


def _refusal(url: str, action: Callable[[WireClient], None]) -> tuple[int, tuple[int, str, int, int]]:
    """(channel, the close's code, text, class id, method id) that ``action`` earns."""
    client = _opened(url)
    try:
        action(client)
        frame = client.method_frame()
        return frame.channel, close_ids(frame)
    except SocketClosed:
        raise AssertionError("the broker closed the socket without a close frame") from None
    finally:
        client.close()


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_close_carries_rabbitmqs_class_and_method_ids(
    rabbitmq_url: str, amqp_url: str, case: str
) -> None:
    expected = _refusal(rabbitmq_url, REFUSALS[case])
    observed = _refusal(amqp_url, REFUSALS[case])
    assert observed == expected


# -- heartbeats ----------------------------------------------------------------------------------------------


def _heartbeats_before_drop(url: str) -> tuple[int, int]:
    """(heartbeats, other frames) a client that negotiates heartbeat=1 and then says nothing receives
    before the broker closes its socket: the cadence and the dead-peer rule in one count, no clock read."""
    client = WireClient.connect(url, timeout_s=10.0)
    heartbeats = others = 0
    try:
        client.handshake(heartbeat=1)
        while True:
            frame = client.frame()
            if frame.frame_type == FRAME_HEARTBEAT:
                heartbeats += 1
            else:
                others += 1
    except SocketClosed:
        return heartbeats, others
    finally:
        client.close()


@pytest.mark.slow
def test_a_silent_client_gets_rabbitmqs_heartbeats_then_is_dropped(rabbitmq_url: str, amqp_url: str) -> None:
    # RabbitMQ sends one every half interval from tune-ok (0.5, 1.0 ... 2.5 s) and drops the peer at its
    # third check (3 s), before a sixth heartbeat and without a connection.close.
    expected = _heartbeats_before_drop(rabbitmq_url)
    observed = _heartbeats_before_drop(amqp_url)
    assert observed == expected == (5, 0)
