"""Frame-level differential checks: reserved fields and the failing-method ids of every close are
compared byte for byte with RabbitMQ's, on raw frames (pamqp and pika forgive both).
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Callable

import pytest
from pamqp import commands
from pamqp.base import Frame
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

from protocol.codec import decode_properties, encode_method, make_method
from tests.integration.raw_amqp import SocketClosed

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
    # third check (3 s), without a connection.close. The sixth heartbeat is due at that same instant: on a
    # quiet machine the drop wins on both brokers, under load either may win on either (RabbitMQ's sender
    # and receiver are separate processes), so 5 or 6 is the same behaviour. A cadence of the whole
    # interval would give 2 or 3, a missing drop no end before the client's 10 s timeout.
    expected = _heartbeats_before_drop(rabbitmq_url)
    observed = _heartbeats_before_drop(amqp_url)
    assert expected in {(5, 0), (6, 0)}, expected
    assert observed in {(5, 0), (6, 0)}, observed


# -- direct reply-to -----------------------------------------------------------------------------------------

REPLY_QUEUE = "amq.rabbitmq.reply-to"
# RabbitMQ 3.13's v2 name (3.10.8 sends the same): base64 of a NEW_PID_EXT pid term on node "reply@<phash2>",
# a dot, base64 of a 16-byte key.
REPLY_NAME = re.compile(r"amq\.rabbitmq\.reply-to\.([A-Za-z0-9+/]+=*)\.([A-Za-z0-9+/]{22}==)")


def _raw_method(channel: int, cls: type[Frame], **fields: object) -> bytes:
    """A method frame pamqp would refuse to build (reply-to names fail its name checks)."""
    return encode_method(channel, make_method(cls, **fields))


def _reply_to_lifecycle(url: str) -> list[object]:
    """What a responder sees of a requester's reply-to name: its shape, a passive and a plain declare of it,
    and a passive declare once the requester's channel has closed; the name itself normalised away."""
    requester, responder = _opened(url), _opened(url)
    try:
        requester.send(commands.Basic.Consume(queue=REPLY_QUEUE, no_ack=True, consumer_tag="replies"), 1)
        requester.method_frame()
        responder.send(commands.Queue.Declare(queue="", exclusive=True), 1)
        declare_ok = responder.method_frame().arguments
        requests = declare_ok[1 : 1 + declare_ok[0]].decode()
        responder.send(commands.Basic.Consume(queue=requests, no_ack=True), 1)
        responder.method_frame()
        _publish(requester, "", requests, commands.Basic.Properties(reply_to=REPLY_QUEUE))
        responder.method_frame()  # basic.deliver, then its content header
        name = decode_properties(responder.frame().payload).reply_to
        responder.frame()
        assert isinstance(name, str)
        match = REPLY_NAME.fullmatch(name)
        assert match is not None, name
        pid = base64.b64decode(match.group(1), validate=True)
        node = pid[5:-12]
        assert pid[:3] == b"\x83\x58\x76", pid  # NEW_PID_EXT, its node an ATOM_UTF8_EXT
        assert int.from_bytes(pid[3:5], "big") == len(node), pid
        assert re.fullmatch(rb"reply@[0-9]+", node), node
        short_name = bytes((len(name),)) + name.encode()  # as a shortstr: its length varies with the node
        seen: list[object] = []
        for passive in (True, False):
            responder.send_bytes(_raw_method(1, commands.Queue.Declare, queue=name, passive=passive))
            frame = responder.method_frame()
            seen.append((frame.ids, frame.payload.replace(short_name, b"<name>")))
        requester.send(commands.Channel.Close(reply_code=200, reply_text="", class_id=0, method_id=0), 1)
        requester.method_frame()
        responder.send_bytes(_raw_method(1, commands.Queue.Declare, queue=name, passive=True))
        code, text, class_id, method_id = close_ids(responder.method_frame())
        seen.append((code, text.replace(name, "<name>"), class_id, method_id))
        return seen
    finally:
        requester.close()
        responder.close()


def test_a_reply_to_name_is_declarable_while_its_consumer_lives_as_rabbitmq(
    rabbitmq_url: str, amqp_url: str
) -> None:
    expected = _reply_to_lifecycle(rabbitmq_url)
    observed = _reply_to_lifecycle(amqp_url)
    assert observed == expected
    declare_ok = ((50, 11), b"\x00\x32\x00\x0b<name>" + struct.pack("!II", 0, 1))
    assert observed[:2] == [declare_ok, declare_ok]
    assert observed[2] == (404, "NOT_FOUND - no queue '<name>' in vhost '/'", 50, 10)


# Names no consumer has: RabbitMQ drops (and with mandatory returns) a publish to most, answers a declare with
# 404, and crashes (541) on names in two dot-separated parts that its v1 decoder cannot turn into a local pid.
FORGED_REPLY_NAMES = {
    "one part": "abc",
    "three parts": "abc.def.ghi",
    "two parts, not base64": "abc.def",
    "base64, not a pid": base64.b64encode(b"\x83a\x05").decode() + ".AAAA",
    "another node's pid": base64.b64encode(
        b"\x83\x58\x76\x00\x0breply@12345" + struct.pack("!III", 9, 0, 7)
    ).decode()
    + "."
    + base64.b64encode(bytes(16)).decode(),
}


def _forged_reply(url: str, suffix: str, publish: bool) -> list[object]:
    client = _opened(url)
    name = "amq.rabbitmq.reply-to." + suffix
    try:
        if publish:
            client.send_bytes(_raw_method(1, commands.Basic.Publish, routing_key=name, mandatory=True))
            client.send(ContentHeader(0, 0, commands.Basic.Properties()), 1)
        else:
            client.send_bytes(_raw_method(1, commands.Queue.Declare, queue=name, passive=True))
        frame = client.method_frame()
        return [frame.channel, close_ids(frame) if frame.ids in ((20, 40), (10, 50)) else frame.payload]
    finally:
        client.close()


@pytest.mark.parametrize("publish", [True, False], ids=["publish", "declare"])
@pytest.mark.parametrize("case", sorted(FORGED_REPLY_NAMES))
def test_unknown_reply_to_names_are_refused_as_rabbitmq(
    rabbitmq_url: str, amqp_url: str, case: str, publish: bool
) -> None:
    suffix = FORGED_REPLY_NAMES[case]
    assert _forged_reply(amqp_url, suffix, publish) == _forged_reply(rabbitmq_url, suffix, publish)
