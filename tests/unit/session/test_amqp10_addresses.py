"""RabbitMQ 4's AMQP 1.0 addresses as broker.session.amqp10.addresses reads them: v2 with percent-encoded
segments, v1 forms, and what is neither."""

from __future__ import annotations

import pytest

from broker.session.amqp10.addresses import Address, parse, parse_v1


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("/queues/q", Address("", "q", "q")),
        ("/queues/a%2Fb%20c", Address("", "a/b c", "a/b c")),
        ("/exchanges/amq.direct/rk", Address("amq.direct", "rk")),
        ("/exchanges/amq.direct/", Address("amq.direct", "")),
        ("/exchanges/amq.fanout", Address("amq.fanout", None)),
        ("/exchanges/amq.default/q", Address("", "q")),
        ("/exchanges/e%2F1/k%2F2", Address("e/1", "k/2")),
        ("/queues/", None),
        ("/queues/a/b", None),
        ("/exchanges//k", None),
        ("/exchanges/e/k/more", None),
        ("/queue/q", None),
        ("q", None),
    ],
)
def test_v2(address: str, parsed: Address | None) -> None:
    assert parse(address) == parsed


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("q", Address("", "q", "q", declare=True, v1=True)),
        ("/queue/q", Address("", "q", "q", declare=True, v1=True)),
        ("/queue", Address("", None, v1=True)),
        ("/amq/queue/q", Address("", "q", "q", v1=True)),
        ("/exchange/amq.direct/rk", Address("amq.direct", "rk", v1=True)),
        ("/exchange/amq.direct", Address("amq.direct", None, v1=True)),
        ("/topic/a.b", Address("amq.topic", "a.b", v1=True)),
        ("", None),
        ("/queues/q", None),
        ("/amq/queue/", None),
        ("/unknown/x", None),
    ],
)
def test_v1(address: str, parsed: Address | None) -> None:
    assert parse_v1(address) == parsed
