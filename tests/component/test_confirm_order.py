"""Publisher confirms mixed with returns, nacks and store commits, in RabbitMQ 3.10.8's frame order.

Every publish of a case is written in one read. The expected sequences are what the oracle sent, every time,
for the same bytes (tests/compat/test_frame_order.py compares live): an unroutable publish gets its own
basic.ack (``multiple=false``) while it is handled, after its basic.return; routed ones are confirmed once the
read is handled (persistent ones on a durable queue once their store batch commits), coalesced into one
``multiple=true`` ack up to the first publish still waiting or nacked, one by one above it.

Letters: T transient to a queue, P persistent to a durable queue, U unroutable mandatory, N unroutable
without mandatory, J refused by an ``x-overflow: reject-publish`` queue. Tokens: ``ret`` a basic.return,
``a3`` / ``A3`` basic.ack of publish 3 with multiple false / true, ``n3`` / ``N3`` the same for basic.nack.
"""

from __future__ import annotations

from typing import Any

import pytest
from pamqp import commands, frame, header
from pamqp.body import ContentBody

from broker.core.broker import Broker
from broker.storage.memory import MemoryStore
from broker.storage.writer import StoreWriter
from tests.component.harness import Client
from tests.unit.core.fakes import ManualLoop

RABBITMQ_3_10_8 = {
    "TTT": "A3",
    "PPP": "A3",
    "NNN": "a1 a2 a3",
    "TU": "ret a2 a1",
    "UT": "ret a1 a2",
    "TUT": "ret a2 A3",
    "UU": "ret a1 ret a2",
    "NU": "a1 ret a2",
    "UN": "ret a1 a2",
    "TTU": "ret a3 A2",
    "TTUTT": "ret a3 A5",
    "PU": "ret a2 a1",
    "UP": "ret a1 a2",
    "PUT": "ret a2 a3 a1",
    "TPU": "ret a3 a1 a2",
    "PUP": "ret a2 A3",
    "PTU": "ret a3 a2 a1",
    "J": "N1",
    "JJ": "N2",
    "TJ": "a1 n2",
    "JT": "a2 N1",
    "TJT": "A1 a3 n2",
    "JU": "ret a2 N1",
    "UJ": "ret a1 N2",
    "TJJT": "A1 a4 n2 n3",
    "PJ": "n2 a1",
    "JP": "N1 a2",
    "PJT": "a3 n2 a1",
    "TUJ": "ret a2 a1 n3",
}


def _publish(kind: str) -> bytes:
    routing_key, mandatory, delivery_mode = {
        "T": ("transient", False, 1),
        "P": ("durable", False, 2),
        "U": ("nowhere", True, 1),
        "N": ("nowhere", False, 1),
        "J": ("refusing", False, 1),
    }[kind]
    return b"".join(
        (
            frame.marshal(commands.Basic.Publish(routing_key=routing_key, mandatory=mandatory), 1),
            frame.marshal(
                header.ContentHeader(0, 1, commands.Basic.Properties(delivery_mode=delivery_mode)), 1
            ),
            frame.marshal(ContentBody(b"x"), 1),
        )
    )


def _token(value: Any) -> str | None:
    if isinstance(value, commands.Basic.Return):
        return "ret"
    if isinstance(value, commands.Basic.Ack | commands.Basic.Nack):
        letter = "a" if isinstance(value, commands.Basic.Ack) else "n"
        return f"{letter.upper() if value.multiple else letter}{value.delivery_tag}"
    return None


def _confirm_client() -> Client:
    loop = ManualLoop()
    writer = StoreWriter(MemoryStore(), loop.call_soon, loop.call_soon, lambda error: None)
    client = Client(Broker(loop.call_soon, persistence=writer), loop=loop)
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="transient"))
    client.send(1, commands.Queue.Declare(queue="durable", durable=True))
    client.send(
        1,
        commands.Queue.Declare(
            queue="refusing", arguments={"x-max-length": 0, "x-overflow": "reject-publish"}
        ),
    )
    client.send(1, commands.Confirm.Select())
    client.received()
    return client


@pytest.mark.parametrize("kinds", sorted(RABBITMQ_3_10_8))
def test_confirms_of_one_read_follow_rabbitmq(kinds: str) -> None:
    client = _confirm_client()
    client.feed(b"".join(_publish(kind) for kind in kinds))
    tokens = [token for _, value in client.received() if (token := _token(value)) is not None]
    assert " ".join(tokens) == RABBITMQ_3_10_8[kinds]


def test_later_reads_continue_from_what_is_settled() -> None:
    """After out-of-order acks, the next read's routed publishes are one multiple ack again."""
    client = _confirm_client()
    for kinds, expected in (("PUT", "ret a2 a3 a1"), ("TT", "A5"), ("UTJ", "ret a6 a7 n8")):
        client.feed(b"".join(_publish(kind) for kind in kinds))
        tokens = [token for _, value in client.received() if (token := _token(value)) is not None]
        assert " ".join(tokens) == expected
