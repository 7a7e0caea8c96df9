"""What the AMQP 1.0 differential tests share: the brokers they run against (WarrenMQ under
``--profile rabbitmq-4.0`` and the RabbitMQ 4.0.5 oracle; the oracle skips with the reason when podman or its
image is missing), a raw AMQP 1.0 client on our codec, for what python-qpid-proton does not show (protocol
headers, SASL outcomes, frames as sent), the `/management` node's link pair on it (``ManagementPair``), and a
user with chosen permissions (``user_with_permissions``)."""

from __future__ import annotations

import socket
import ssl
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pika
import pytest
import requests

from protocol.amqp10.condition import Error
from protocol.amqp10.frames import (
    AMQP_HEADER,
    SASL_HEADER,
    TYPE_SASL,
    FrameScanner,
    ProtocolHeader,
    encode_frame,
)
from protocol.amqp10.message import Message, decode_message, encode_sections
from protocol.amqp10.performatives import (
    Attach,
    Begin,
    Disposition,
    End,
    Flow,
    Open,
    Performative,
    Transfer,
    decode_performative,
    encode_performative,
)
from protocol.amqp10.sasl import SaslFrame, SaslInit, decode_sasl
from protocol.amqp10.sections import AmqpValue, Properties
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Described, Symbol, UByte, UInt

WARRENMQ = "warrenmq"
RABBITMQ4 = "rabbitmq-4.0.5"
BROKERS = [WARRENMQ, RABBITMQ4]
RESET = "reset"
# The delivery-count a receiver link starts at on RabbitMQ 4.0.5 (2^32 - 5), and the transfer-id of a
# session's first transfer (2^32 - 4).
INITIAL_DELIVERY_COUNT = 2**32 - 5
INITIAL_OUTGOING_ID = 2**32 - 4
EOF_ = "eof"


def broker_port(request: pytest.FixtureRequest, which: str) -> int:
    """The AMQP port of ``which`` broker (its session fixture started once per test session)."""
    if which == WARRENMQ:
        return int(request.getfixturevalue("warrenmq_40").port)
    return int(request.getfixturevalue("rabbitmq4_node").port)


def broker_http_url(request: pytest.FixtureRequest, which: str) -> str:
    """The management API's base URL of ``which`` broker."""
    if which == WARRENMQ:
        return f"http://127.0.0.1:{request.getfixturevalue('warrenmq_40').management_port}"
    return str(request.getfixturevalue("rabbitmq4_node").http_url)


@contextmanager
def user_with_permissions(api: str, configure: str, write: str, read: str) -> Iterator[str]:
    """A user (password ``pw``) with these permissions on ``/``, made through the management API and
    deleted afterwards."""
    name = f"limited-{uuid.uuid4().hex[:8]}"
    auth = ("guest", "guest")
    requests.put(f"{api}/api/users/{name}", json={"password": "pw", "tags": ""}, auth=auth, timeout=10)
    permissions = {"configure": configure, "write": write, "read": read}
    requests.put(f"{api}/api/permissions/%2F/{name}", json=permissions, auth=auth, timeout=10)
    try:
        yield name
    finally:
        requests.delete(f"{api}/api/users/{name}", auth=auth, timeout=10)


def proton_url(port: int, user: str = "guest", password: str = "guest") -> str:
    return f"amqp://{user}:{password}@127.0.0.1:{port}"


def pika_channel(port: int) -> Any:
    params = pika.ConnectionParameters(
        "127.0.0.1",
        port,
        "/",
        pika.PlainCredentials("guest", "guest"),
        connection_attempts=1,
        socket_timeout=5,
    )
    return pika.BlockingConnection(params).channel()


Item = ProtocolHeader | SaslFrame | tuple[int, Performative, Message | None] | str


class RawClient:
    """An AMQP 1.0 client that sends what it is told and returns everything the server sends."""

    def __init__(self, port: int, tls: ssl.SSLContext | None = None) -> None:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock = tls.wrap_socket(sock, server_hostname="localhost") if tls is not None else sock
        self.scanner = FrameScanner(max_frame_size=0)
        self.user = "guest"
        self._pending: list[Item] = []  # read beyond what read_count returned

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def sasl(self, frame: SaslFrame) -> None:
        self.send(encode_frame(encode_performative(frame), frame_type=TYPE_SASL))  # type: ignore[arg-type]

    def perform(self, performative: Performative, channel: int = 0, payload: bytes = b"") -> None:
        self.send(encode_frame(encode_performative(performative, payload), channel))

    def read_until(self, done: Callable[[list[Item]], bool], deadline_s: float = 10.0) -> list[Item]:
        """Items until ``done(items)`` holds or the socket ends (RESET / EOF_ appended), else fails."""
        items, self._pending = self._pending, []
        end = time.monotonic() + deadline_s
        while not done(items):
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no answer in {deadline_s}s; got {items!r}")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLEOFError):
                items.append(RESET)
                return items
            except TimeoutError:
                continue
            if not data:
                items.append(EOF_)
                return items
            for item in self.scanner.feed(data):
                if isinstance(item, ProtocolHeader):
                    items.append(item)
                elif item.frame_type == TYPE_SASL:
                    items.append(decode_sasl(item.body))
                elif item.body:
                    performative, payload = decode_performative(item.body)
                    items.append((item.channel, performative, decode_message(payload) if payload else None))
        return items

    def read_count(self, count: int, deadline_s: float = 10.0) -> list[Item]:
        """The next ``count`` items (fewer if the socket ends); any more read stay for the next call."""
        items = self.read_until(lambda items: len(items) >= count, deadline_s)
        self._pending = items[count:]
        return items[:count]

    def authenticate(self, mechanism: str = "PLAIN", response: bytes = b"\0guest\0guest") -> None:
        """The SASL layer (its outcome asserted ok), then the AMQP header sent; the open is the caller's."""
        self.send(SASL_HEADER)
        self.read_count(2)
        self.sasl(SaslInit(mechanism=Symbol(mechanism), initial_response=response))
        (outcome,) = self.read_count(1)
        assert getattr(outcome, "code", None) == 0, outcome
        self.scanner.expect_protocol_header()
        self.send(AMQP_HEADER)

    def login(
        self, mechanism: str = "PLAIN", response: bytes = b"\0guest\0guest", hostname: str = "vhost:/"
    ) -> None:
        """SASL, the AMQP header and open; asserts each step's answer."""
        self.authenticate(mechanism, response)
        self.perform(Open(container_id="warrenmq-tests", hostname=hostname))
        header, opened = self.read_count(2)
        assert header == ProtocolHeader(AMQP_HEADER), header
        assert isinstance(opened, tuple), opened

    def begin(self, channel: int = 0) -> Begin:
        self.perform(Begin(next_outgoing_id=0, incoming_window=1000, outgoing_window=1000), channel)
        (item,) = self.read_count(1)
        assert isinstance(item, tuple), item
        begun = item[1]
        assert isinstance(begun, Begin), begun
        return begun


def performatives(items: list[Item]) -> list[Performative]:
    return [item[1] for item in items if isinstance(item, tuple)]


def settled_ids(items: list[Item]) -> set[int]:
    """The delivery-ids the dispositions among ``items`` settle (a disposition may cover a range)."""
    ids: set[int] = set()
    for performative in performatives(items):
        if isinstance(performative, Disposition):
            last = performative.last if performative.last is not None else performative.first
            ids.update(range(performative.first, last + 1))
    return ids


def attach_receiver(
    client: RawClient,
    queue: str,
    handle: int = 0,
    settled: bool = False,
    filter_set: dict[Any, Any] | None = None,
) -> Item:
    """Attach a receiver link from `/queues/<queue>` (with ``filter_set`` as its source's filter); the first
    item answered (the attach, or the session's end)."""
    client.perform(
        Attach(
            name=f"r{handle}",
            handle=handle,
            role=True,
            snd_settle_mode=1 if settled else 0,
            rcv_settle_mode=0,
            source=Source(address=f"/queues/{queue}", filter=filter_set),
            target=Target(address="receiver"),
        )
    )
    (answer,) = client.read_count(1)
    return answer


def credit(
    client: RawClient, link_credit: int, delivery_count: int = INITIAL_DELIVERY_COUNT, **more: Any
) -> None:
    """A flow giving link 0 ``link_credit`` from the receiver's ``delivery_count`` (drain or echo in
    ``more``)."""
    client.perform(
        Flow(
            next_incoming_id=INITIAL_OUTGOING_ID,
            incoming_window=1000,
            next_outgoing_id=0,
            outgoing_window=1000,
            handle=0,
            delivery_count=delivery_count,
            link_credit=link_credit,
            **more,
        )
    )


# -- streams (tests/compat/test_amqp10_streams*.py)

OFFSET_SPEC = "rabbitmq:stream-offset-spec"


def described(name: str, value: Any) -> Described:
    return Described(Symbol(name), value)


def offset_spec(value: Any) -> dict[Any, Any]:
    """A filter-set with ``rabbitmq:stream-offset-spec`` as 4.0's clients send it (described by its name)."""
    return {Symbol(OFFSET_SPEC): described(OFFSET_SPEC, value)}


def declare_stream(port: int) -> tuple[str, Any]:
    """A new stream queue and the pika channel (in confirm mode) that declared it."""
    name = f"amqp10-stream-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(port)
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    channel.confirm_delivery()
    return name, channel


def publish_one(port: int, queue: str, body: bytes) -> None:
    channel = pika_channel(port)
    channel.confirm_delivery()
    channel.basic_publish("", queue, body)
    channel.connection.close()


def open_session(port: int) -> RawClient:
    """A raw client logged in, with a session on channel 0."""
    client = RawClient(port)
    client.login()
    client.begin()
    return client


def attached(answer: Item) -> Attach:
    assert isinstance(answer, tuple), answer
    attach = answer[1]
    assert isinstance(attach, Attach), answer
    return attach


def drain(client: RawClient, link_credit: int, delivery_count: int = INITIAL_DELIVERY_COUNT) -> list[Item]:
    """Credit with drain: what is available, then the flow that spends the rest (read until that flow)."""
    credit(client, link_credit, delivery_count, drain=True)
    return client.read_until(
        lambda items: any(isinstance(p, Flow) and p.handle == 0 for p in performatives(items))
    )


def deliveries(items: list[Item]) -> list[tuple[Transfer, Message]]:
    found = []
    for item in items:
        if isinstance(item, tuple) and isinstance(item[1], Transfer):
            message = item[2]
            assert message is not None
            found.append((item[1], message))
    return found


def stream_offsets(items: list[Item]) -> list[int]:
    """The x-stream-offset annotation of each transfer among ``items``."""
    offsets = []
    for _, message in deliveries(items):
        assert message.message_annotations is not None
        offsets.append(message.message_annotations.value[Symbol("x-stream-offset")])
    return offsets


MANAGEMENT = "/management"
PAIRED = {Symbol("paired"): True}
_UINT = 2**32


class ManagementPair:
    """The /management node's link pair on a raw client's session 0: the request sender on handle 0, the
    reply receiver on handle 1 with ``credit`` (RabbitMQ 4's HTTP over AMQP)."""

    def __init__(self, client: RawClient, credit: int = 100, name: str = "management") -> None:
        self.client = client
        self.next_id = 0
        self.items: list[Item] = []  # what came besides the replies (flows), in order
        client.perform(
            Attach(
                name=name,
                handle=UInt(0),
                role=False,
                snd_settle_mode=UByte(1),
                rcv_settle_mode=UByte(0),
                source=Source(address=MANAGEMENT),
                target=Target(address=MANAGEMENT),
                initial_delivery_count=UInt(0),
                properties=PAIRED,
            )
        )
        self.sender_attached = client.read_count(2)  # the attach and the 8 credits
        client.perform(
            Attach(
                name=name,
                handle=UInt(1),
                role=True,
                snd_settle_mode=UByte(1),
                rcv_settle_mode=UByte(0),
                source=Source(address=MANAGEMENT),
                target=Target(address=MANAGEMENT),
                properties=PAIRED,
            )
        )
        self.receiver_attached = client.read_count(1)
        if credit:
            # The session's next-outgoing-id on both brokers starts at 2^32 - 4 (rabbit_amqp_session).
            client.perform(
                Flow(
                    next_incoming_id=UInt(_UINT - 4),
                    incoming_window=UInt(1000),
                    next_outgoing_id=UInt(0),
                    outgoing_window=UInt(1000),
                    handle=UInt(1),
                    delivery_count=UInt(_UINT - 5),
                    link_credit=UInt(credit),
                )
            )

    def send(self, method: str, to: str, body: Any = None, settled: bool = True) -> str:
        message_id = f"request-{self.next_id}"
        payload = encode_sections(
            [Properties(message_id=message_id, to=to, subject=method, reply_to="$me"), AmqpValue(body)]
        )
        transfer = Transfer(
            handle=UInt(0),
            delivery_id=UInt(self.next_id),
            delivery_tag=str(self.next_id).encode(),
            message_format=UInt(0),
            settled=settled,
        )
        self.client.perform(transfer, payload=payload)
        self.next_id += 1
        return message_id

    def reply(self) -> tuple[Transfer, Message] | End:
        """The next reply (its transfer and message), or the End that ended the session instead."""
        while True:
            (item,) = self.client.read_count(1)
            assert isinstance(item, tuple), item
            _, performative, message = item
            if isinstance(performative, Transfer):
                assert message is not None
                return performative, message
            if isinstance(performative, End):
                return performative
            self.items.append(item)

    def request(self, method: str, to: str, body: Any = None) -> tuple[str, Any]:
        """The reply's status and body; its correlation-id is checked against the request's message-id."""
        message_id = self.send(method, to, body)
        answer = self.reply()
        assert not isinstance(answer, End), answer
        _, message = answer
        assert message.properties is not None
        assert message.properties.correlation_id == message_id
        assert message.application_properties is not None
        assert message.application_properties.value == {"http:response": "1.1"}
        (section,) = message.body
        assert isinstance(section, AmqpValue)
        assert message.properties.subject is not None
        return message.properties.subject, section.value

    def ended(self, method: str, to: str, body: Any = None, settled: bool = True) -> tuple[str, str]:
        """A request that ends the session: the End's condition and description."""
        self.send(method, to, body, settled)
        answer = self.reply()
        assert isinstance(answer, End), answer
        assert isinstance(answer.error, Error), answer
        return str(answer.error.condition), str(answer.error.description)
