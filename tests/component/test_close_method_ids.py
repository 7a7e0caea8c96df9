"""Every channel.close / connection.close names the method that failed, with the class and method ids RabbitMQ
sends (observed on RabbitMQ 3.10.8 with a raw socket; tests/compat/test_wire_fidelity.py compares live):
errors raised while a publish's content is handled name basic.publish (60/40), never 0/0, and acks, nacks and
rejects of unknown delivery tags name their own method. Read from the raw bytes the session wrote, on the
native frame scanner and on the pure one (the suite's WARRENMQ_PURE pass).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from pamqp import commands, frame, header
from pamqp.base import Frame
from pamqp.body import ContentBody

from tests.component.harness import Client

Close = tuple[int, int, str, int, int]  # channel, reply code, reply text, class id, method id


def _closes(client: Client) -> list[Close]:
    """Every channel.close and connection.close in what the broker wrote, decoded by hand from the bytes."""
    data = bytes(client.transport.buffer)
    client.transport.buffer.clear()
    closes: list[Close] = []
    while data:
        frame_type, channel, size = struct.unpack_from("!BHI", data)
        payload = data[7 : 7 + size]
        data = data[8 + size :]
        if frame_type != 1 or payload[:4] not in (b"\x00\x14\x00\x28", b"\x00\x0a\x00\x32"):
            continue
        code, text_len = struct.unpack_from("!HB", payload, 4)
        class_id, method_id = struct.unpack_from("!HH", payload, 7 + text_len)
        closes.append((channel, code, payload[7 : 7 + text_len].decode(), class_id, method_id))
    return closes


def _opened() -> Client:
    client = Client()
    client.handshake()
    client.open_channel(1)
    return client


def _publish_frames(exchange: str, properties: commands.Basic.Properties | None = None) -> list[bytes]:
    return [
        frame.marshal(commands.Basic.Publish(exchange=exchange, routing_key="k"), 1),
        frame.marshal(header.ContentHeader(0, 1, properties or commands.Basic.Properties()), 1),
        frame.marshal(ContentBody(b"x"), 1),
    ]


def _publish_in_one_read(
    exchange: str, properties: commands.Basic.Properties | None = None
) -> Callable[[Client], None]:
    # One read: the native scanner hands method, header and body over as one FRAME_PUBLISH item.
    return lambda client: client.feed(b"".join(_publish_frames(exchange, properties)))


def _publish_frame_by_frame(exchange: str) -> Callable[[Client], None]:
    # One read per frame: the error surfaces on the body frame (the pure path of every scanner).
    def act(client: Client) -> None:
        for data in _publish_frames(exchange):
            client.feed(data)

    return act


def _after(prepare: Frame, act: Callable[[Client], None]) -> Callable[[Client], None]:
    """``act`` once ``prepare`` has been sent on channel 1 and its reply read."""

    def both(client: Client) -> None:
        client.send(1, prepare)
        client.transport.buffer.clear()
        act(client)

    return both


INTERNAL = commands.Exchange.Declare(exchange="internal-x", exchange_type="fanout", internal=True)


NO_EXCHANGE = (1, 404, "NOT_FOUND - no exchange 'missing' in vhost '/'", 60, 40)
UNKNOWN_TAG = "PRECONDITION_FAILED - unknown delivery tag 7"

CASES: dict[str, tuple[Callable[[Client], None], Close]] = {
    "publish to a missing exchange, one read": (_publish_in_one_read("missing"), NO_EXCHANGE),
    "publish to a missing exchange, frame by frame": (_publish_frame_by_frame("missing"), NO_EXCHANGE),
    "publish to an internal exchange": (
        _after(INTERNAL, _publish_in_one_read("internal-x")),
        (1, 403, "ACCESS_REFUSED - cannot publish to internal exchange 'internal-x' in vhost '/'", 60, 40),
    ),
    "publish with an invalid expiration": (
        _publish_in_one_read("", commands.Basic.Properties(expiration="soon")),
        (1, 406, "PRECONDITION_FAILED - invalid expiration 'soon': no_integer", 60, 40),
    ),
    "publish asking for a direct reply without a reply consumer": (
        _publish_in_one_read("", commands.Basic.Properties(reply_to="amq.rabbitmq.reply-to")),
        (1, 406, "PRECONDITION_FAILED - fast reply consumer does not exist", 60, 40),
    ),
    # rabbit_channel looks the exchange up before it reads a property: the 404 wins over the property's 406.
    "bad user_id to a missing exchange": (
        _publish_in_one_read("missing", commands.Basic.Properties(user_id="someone-else")),
        NO_EXCHANGE,
    ),
    "bad expiration to a missing exchange": (
        _publish_in_one_read("missing", commands.Basic.Properties(expiration="soon")),
        NO_EXCHANGE,
    ),
    # In a transaction RabbitMQ refuses the publish itself, not the tx.commit.
    "publish in a transaction to a missing exchange": (
        _after(commands.Tx.Select(), _publish_in_one_read("missing")),
        NO_EXCHANGE,
    ),
    "basic.ack of an unknown tag": (
        lambda client: client.send(1, commands.Basic.Ack(delivery_tag=7)),
        (1, 406, UNKNOWN_TAG, 60, 80),
    ),
    "basic.ack multiple of an unknown tag": (
        lambda client: client.send(1, commands.Basic.Ack(delivery_tag=7, multiple=True)),
        (1, 406, UNKNOWN_TAG, 60, 80),
    ),
    "basic.ack of an unknown tag in a transaction": (
        _after(commands.Tx.Select(), lambda client: client.send(1, commands.Basic.Ack(delivery_tag=7))),
        (1, 406, UNKNOWN_TAG, 60, 80),
    ),
    "basic.nack of an unknown tag": (
        lambda client: client.send(1, commands.Basic.Nack(delivery_tag=7)),
        (1, 406, UNKNOWN_TAG, 60, 120),
    ),
    "basic.reject of an unknown tag": (
        lambda client: client.send(1, commands.Basic.Reject(delivery_tag=7)),
        (1, 406, UNKNOWN_TAG, 60, 90),
    ),
    # A close-ok on an open channel is not ignored: rabbit_channel answers it as an unknown method.
    "channel.close-ok on an open channel": (
        lambda client: client.send(1, commands.Channel.CloseOk()),
        (0, 503, "COMMAND_INVALID - unimplemented method", 20, 41),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_close_names_the_failing_method_as_rabbitmq(case: str) -> None:
    action, expected = CASES[case]
    client = _opened()
    action(client)
    assert _closes(client) == [expected]
