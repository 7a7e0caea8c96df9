"""Direct reply-to names as RabbitMQ 3.13 makes and reads them (checked against RabbitMQ 3.10.8, which uses
the same v2 encoding; live comparison in tests/compat/test_wire_fidelity.py): the name's shape, declare-ok for
a live name from any other channel, 404 once its consumer is gone, and the 541 crash RabbitMQ's channel has on
names it cannot decode. The name is volatile: its shape is checked, not its value.
"""

from __future__ import annotations

import base64
import re
import struct

import pytest
from pamqp import commands
from pamqp.header import ContentHeader

from broker.core.exchanges.erlang_hash import Atom, phash2
from broker.core.model.profile import PROFILES
from broker.session.config import SessionConfig
from protocol.codec import encode_method, make_method
from tests.component.harness import Client

NODE = "rabbit@test-host"
REPLY_QUEUE = "amq.rabbitmq.reply-to"
# "amq.rabbitmq.reply-to." + base64 (standard alphabet, padded) of the pid term + "." + base64 of 16 bytes.
NAME = re.compile(r"amq\.rabbitmq\.reply-to\.([A-Za-z0-9+/]+=*)\.([A-Za-z0-9+/]{22}==)")


def _client(profile: str = "rabbitmq-3.13") -> Client:
    client = Client(config=SessionConfig(node_name=NODE))
    client.broker.profile = PROFILES[profile]
    client.handshake()
    return client


def _reply_name(client: Client, channel: int = 1) -> str:
    """Set up a reply consumer on ``channel`` and return the name a responder sees in reply_to."""
    client.open_channel(channel)
    client.send(channel, commands.Basic.Consume(queue=REPLY_QUEUE, no_ack=True, consumer_tag="replies"))
    client.send(channel, commands.Queue.Declare(queue="requests", exclusive=True))
    client.publish(channel, b"request", "requests", reply_to=REPLY_QUEUE)
    client.received()
    client.send(channel, commands.Basic.Get(queue="requests", no_ack=True))
    properties = client.received()[1][1].properties
    assert isinstance(properties.reply_to, str)
    return properties.reply_to


def _declare(client: Client, channel: int, name: str, passive: bool = True) -> bytes:
    """Raw bytes the broker answers a queue.declare of ``name`` with (pamqp refuses such names)."""
    client.feed(encode_method(channel, make_method(commands.Queue.Declare, queue=name, passive=passive)))
    data = bytes(client.transport.buffer)
    client.transport.buffer.clear()
    return data


def _declare_ok(channel: int, name: str) -> bytes:
    payload = b"\x00\x32\x00\x0b" + bytes((len(name),)) + name.encode() + struct.pack("!II", 0, 1)
    return struct.pack("!BHI", 1, channel, len(payload)) + payload + b"\xce"


def _close(data: bytes) -> tuple[int, int, str, int, int]:
    channel, size = struct.unpack_from("!HI", data, 1)
    payload = data[7 : 7 + size]
    assert payload[:4] in (b"\x00\x14\x00\x28", b"\x00\x0a\x00\x32"), payload[:4]
    code, text_len = struct.unpack_from("!HB", payload, 4)
    class_id, method_id = struct.unpack_from("!HH", payload, 7 + text_len)
    return channel, code, payload[7 : 7 + text_len].decode(), class_id, method_id


INTERNAL_ERROR = (0, 541, "INTERNAL_ERROR", 0, 0)


def test_the_name_is_rabbitmq_313s_encoded_pid_and_key() -> None:
    name = _reply_name(_client())
    match = NAME.fullmatch(name)
    assert match is not None, name
    pid = base64.b64decode(match.group(1), validate=True)
    node = f"reply@{phash2(Atom(NODE))}".encode()
    # term_to_binary of a pid (NEW_PID_EXT) whose node atom (ATOM_UTF8_EXT) is "reply@" + phash2(node()),
    # then ID, serial and creation, 32 bits each (pid_recomposition:to_binary).
    assert pid[:5] == b"\x83\x58\x76" + struct.pack("!H", len(node))
    assert pid[5 : 5 + len(node)] == node
    assert len(pid) == 5 + len(node) + 12
    assert len(base64.b64decode(match.group(2), validate=True)) == 16


def test_two_reply_consumers_get_different_names() -> None:
    client = _client()
    assert _reply_name(client, 1) != _reply_name(client, 2)


@pytest.mark.parametrize("passive", [True, False], ids=["passive", "not passive"])
def test_a_live_name_declares_ok_from_another_channel(passive: bool) -> None:
    client = _client()
    name = _reply_name(client, 1)
    client.open_channel(2)
    assert _declare(client, 2, name, passive) == _declare_ok(2, name)


@pytest.mark.parametrize("passive", [True, False], ids=["passive", "not passive"])
def test_the_pseudo_queue_declares_ok(passive: bool) -> None:
    client = _client()
    client.open_channel(1)
    assert _declare(client, 1, REPLY_QUEUE, passive) == _declare_ok(1, REPLY_QUEUE)


def test_the_name_is_not_found_once_the_requesters_channel_closed() -> None:
    client = _client()
    name = _reply_name(client, 1)
    client.send(1, commands.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0))
    client.open_channel(2)
    text = f"NOT_FOUND - no queue '{name}' in vhost '/'"
    assert _close(_declare(client, 2, name)) == (2, 404, text, 50, 10)


def test_the_name_is_not_found_once_its_consumer_is_cancelled() -> None:
    client = _client()
    name = _reply_name(client, 1)
    client.send(1, commands.Basic.Cancel(consumer_tag="replies"))
    client.open_channel(2)
    assert _close(_declare(client, 2, name))[1] == 404


def test_declaring_its_own_name_on_the_reply_channel_is_541() -> None:
    # RabbitMQ's channel asks the pid in the name whether the key is its consumer's: itself, and it crashes.
    client = _client()
    name = _reply_name(client, 1)
    assert _close(_declare(client, 1, name)) == INTERNAL_ERROR


def _v2(node: str) -> str:
    encoded = node.encode()
    pid = b"\x83\x58\x76" + struct.pack("!H", len(encoded)) + encoded + struct.pack("!III", 9999, 0, 7)
    return f"{base64.b64encode(pid).decode()}.{base64.b64encode(bytes(16)).decode()}"


# Suffixes after "amq.rabbitmq.reply-to." that no live consumer has, and what RabbitMQ 3.10.8 answers a
# publish to one (mandatory) and a declare of one: v2 names of this node are unknown (returned, 404); anything
# in two dot-separated parts is then read as v1, whose binary_to_term crashes on what is not a pid of this
# node (541).
FORGED = {
    "one part": ("abc", False),
    "three parts": ("abc.def.ghi", False),
    "empty": ("", False),
    "this node, no such pid": (_v2(f"reply@{phash2(Atom(NODE))}"), False),
    # Only the integer after "@" is compared with the node's hash (rabbit_nodes_common:parts).
    "this node's hash after another name": (_v2(f"x@+{phash2(Atom(NODE))}"), False),
    "two parts, not base64": ("abc.def", True),
    "base64, not a pid": (base64.b64encode(b"\x83a\x05").decode() + ".AAAA", True),
    "another node's pid": (_v2("reply@12345"), True),
}


@pytest.mark.parametrize("case", sorted(FORGED))
def test_a_publish_to_an_unknown_name_is_returned_or_crashes_as_rabbitmq(case: str) -> None:
    suffix, crashes = FORGED[case]
    name = "amq.rabbitmq.reply-to." + suffix
    client = _client()
    client.open_channel(1)
    client.feed(encode_method(1, make_method(commands.Basic.Publish, routing_key=name, mandatory=True)))
    client.send(1, ContentHeader(0, 0))
    frames = bytes(client.transport.buffer)
    if crashes:
        assert _close(frames) == INTERNAL_ERROR
    else:
        assert frames[7:11] == b"\x00\x3c\x00\x32"  # basic.return NO_ROUTE: dropped, as 3.x returns it


@pytest.mark.parametrize("case", sorted(FORGED))
def test_a_declare_of_an_unknown_name_is_404_or_crashes_as_rabbitmq(case: str) -> None:
    suffix, crashes = FORGED[case]
    name = "amq.rabbitmq.reply-to." + suffix
    client = _client()
    client.open_channel(1)
    expected = INTERNAL_ERROR if crashes else (1, 404, f"NOT_FOUND - no queue '{name}' in vhost '/'", 50, 10)
    assert _close(_declare(client, 1, name)) == expected


@pytest.mark.parametrize(
    ("profile", "crashes"),
    [("rabbitmq-3.10", True), ("rabbitmq-3.13", True), ("rabbitmq-4.0", True), ("rabbitmq-4.3", False)],
)
def test_an_undecodable_name_crashes_up_to_4_1_and_is_unknown_since_4_2(profile: str, crashes: bool) -> None:
    # 4.2 rewrote direct reply-to (volatile queues): a name it cannot decode is not found, not a crash.
    client = _client(profile)
    client.open_channel(1)
    name = "amq.rabbitmq.reply-to.abc.def"
    expected = INTERNAL_ERROR if crashes else (1, 404, f"NOT_FOUND - no queue '{name}' in vhost '/'", 50, 10)
    assert _close(_declare(client, 1, name)) == expected
