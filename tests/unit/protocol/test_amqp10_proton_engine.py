"""Our AMQP 1.0 frames against Qpid Proton's engine (Proton-C's transport, in memory, no socket).

A Proton client connection talks to frames we build: it must accept our SASL mechanisms and outcome, open,
begin, attach, flow and disposition (it checks every field it reads), and we must read its SASL init, open,
begin, attach and a transfer with a message Proton encoded. This holds the codec to a real peer's framing, not
only to Proton's value encoder.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocol.amqp10.delivery_states import Accepted
from protocol.amqp10.encode import encode
from protocol.amqp10.frames import AMQP_HEADER, SASL_HEADER, TYPE_SASL, Frame, FrameScanner, encode_frame
from protocol.amqp10.message import decode_message
from protocol.amqp10.performatives import (
    ROLE_RECEIVER,
    Attach,
    Begin,
    Close,
    Disposition,
    Flow,
    Open,
    Transfer,
    decode_performative,
    encode_performative,
)
from protocol.amqp10.sasl import SASL_OK, SaslInit, SaslMechanisms, SaslOutcome, decode_sasl
from protocol.amqp10.terminus import Target
from protocol.amqp10.types import Symbol

proton = pytest.importorskip("proton", reason="python-qpid-proton (the dev extra) is not installed")


class ProtonClient:
    """A Proton client connection and its transport; ``exchange`` writes our octets, returns its items."""

    def __init__(self) -> None:
        self.transport = proton.Transport()
        self.connection = proton.Connection()
        self.connection.container = "proton-client"
        self.connection.hostname = "vhost:/"
        self.connection.user = "guest"
        self.connection.password = "guest"
        self.transport.bind(self.connection)
        # PLAIN without TLS, as a client of a broker's plain AMQP port is configured to.
        proton.SASL(self.transport).allow_insecure_mechs = True
        self.scanner = FrameScanner(max_frame_size=0)

    def exchange(self, ours: bytes = b"") -> list[Any]:
        if ours:
            self.transport.push(ours)
        assert self.transport.condition is None, self.transport.condition
        out = b""
        while (pending := self.transport.pending()) > 0:
            out += self.transport.peek(pending)
            self.transport.pop(pending)
        items: list[Any] = []
        for item in self.scanner.feed(out):
            if not isinstance(item, Frame):
                items.append(item.header)
            elif item.frame_type == TYPE_SASL:
                items.append(decode_sasl(item.body))
            elif not item.is_heartbeat:
                items.append(decode_performative(item.body))
        return items


def amqp(*performatives: Any, payload: bytes = b"") -> bytes:
    return b"".join(encode_frame(encode_performative(p, payload)) for p in performatives)


def test_a_proton_client_connects_publishes_and_is_settled_through_our_frames() -> None:
    client = ProtonClient()
    client.connection.open()
    session = client.connection.session()
    session.open()
    sender = session.sender("publisher")
    sender.target.address = "/queues/q"
    sender.open()

    assert client.exchange() == [SASL_HEADER]
    mechanisms = SaslMechanisms(sasl_server_mechanisms=(Symbol("PLAIN"), Symbol("ANONYMOUS")))
    sent = client.exchange(SASL_HEADER + encode_frame(encode(mechanisms), frame_type=TYPE_SASL))
    init = sent[0]
    assert isinstance(init, SaslInit)
    assert init.mechanism == "PLAIN"
    assert init.initial_response == b"\x00guest\x00guest"

    sent += client.exchange(encode_frame(encode(SaslOutcome(code=SASL_OK)), frame_type=TYPE_SASL))
    sent = sent[1:]
    assert sent[0] == AMQP_HEADER
    (open_, _), (begin, _), (attach, _) = sent[1:4]
    assert isinstance(open_, Open)
    assert open_.container_id == "proton-client"
    assert open_.hostname == "vhost:/"
    assert isinstance(begin, Begin)
    assert isinstance(attach, Attach)
    assert attach.name == "publisher"
    assert attach.role is False
    assert isinstance(attach.target, Target)
    assert attach.target.address == "/queues/q"

    answer = AMQP_HEADER + amqp(
        Open(container_id="warrenmq", max_frame_size=131072, channel_max=63, idle_time_out=30000),
        Begin(remote_channel=0, next_outgoing_id=0, incoming_window=400, outgoing_window=2**32 - 1),
        Attach(
            name="publisher",
            handle=0,
            role=ROLE_RECEIVER,
            target=Target(address="/queues/q"),
            initial_delivery_count=0,
            max_message_size=2**64 - 1,
        ),
        Flow(
            next_incoming_id=0,
            incoming_window=400,
            next_outgoing_id=0,
            outgoing_window=2**32 - 1,
            handle=0,
            delivery_count=0,
            link_credit=10,
        ),
    )
    client.exchange(answer)
    assert client.connection.remote_container == "warrenmq"
    assert client.transport.remote_max_frame_size == 131072
    assert sender.credit == 10

    message = proton.Message(
        body="hello",
        id="m-1",
        subject="greeting",
        content_type="text/plain",
        properties={"k": "v"},
        durable=True,
        priority=7,
    )
    delivery = sender.delivery(b"tag-1")
    sender.send(message.encode())
    sender.advance()
    (transfer, payload), *_ = client.exchange()
    assert isinstance(transfer, Transfer)
    assert transfer.delivery_tag == b"tag-1"
    assert transfer.delivery_id == 0
    decoded = decode_message(payload)
    assert decoded.header is not None
    assert decoded.header.durable is True
    assert decoded.header.priority == 7
    assert decoded.properties is not None
    assert (decoded.properties.message_id, decoded.properties.subject) == ("m-1", "greeting")
    assert decoded.properties.content_type == Symbol("text/plain")
    assert decoded.application_properties is not None
    assert decoded.application_properties.value == {"k": "v"}
    assert [section.value for section in decoded.body] == ["hello"]

    client.exchange(amqp(Disposition(role=ROLE_RECEIVER, first=0, settled=True, state=Accepted())))
    assert delivery.remote_state == proton.Delivery.ACCEPTED
    assert delivery.settled

    client.connection.close()
    client.exchange(amqp(Close()))
    assert client.connection.state & proton.Endpoint.REMOTE_CLOSED
