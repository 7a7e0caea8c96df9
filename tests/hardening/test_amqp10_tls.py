"""AMQP 1.0 over the AMQPS listener: the protocol header read after the TLS handshake picks AMQP 1.0 there
too (RabbitMQ 4 serves both protocols on its TLS port as on the plain one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.amqp10.performatives import Attach, Flow
from protocol.amqp10.terminus import Target
from tests.compat.amqp10_support import RawClient, performatives
from tests.hardening.served import Served, serve
from tests.hardening.test_tls import _tls_conf, certs  # noqa: F401 - certs is a fixture
from tests.ports import free_port
from tests.tls_certs import Certificates


@pytest.fixture
def amqp10_tls_broker(tmp_path: Path, certs: Certificates) -> Iterator[tuple[Served, int]]:  # noqa: F811
    ssl_port = free_port()
    conf = _tls_conf(certs, ssl_port, fail_if_no_peer_cert=False)
    served = serve(tmp_path, conf, env={"WARRENMQ_PROFILE": "rabbitmq-4.0"})
    yield served, ssl_port
    served.stop()


def test_amqp10_over_tls(amqp10_tls_broker: tuple[Served, int], certs: Certificates) -> None:  # noqa: F811
    served, ssl_port = amqp10_tls_broker
    client = RawClient(ssl_port, tls=certs.client_context())
    client.login()
    client.begin()
    target = Target(address="/exchanges/amq.fanout")
    client.perform(Attach(name="s", handle=0, role=False, initial_delivery_count=0, target=target))
    attached, flow = performatives(client.read_count(2))
    _status, connections = served.http("/api/connections")
    client.close()
    assert isinstance(attached, Attach)
    assert isinstance(flow, Flow)
    assert flow.link_credit == 170
    assert [(row["protocol"], row["ssl"]) for row in connections] == [("AMQP 1-0", True)]
