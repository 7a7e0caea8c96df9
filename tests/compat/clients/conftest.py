"""The client matrix's brokers: each with its management API, which the Java programs use to close their
connection (automatic recovery), started once per session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.compat.rabbitmq_node import RABBITMQ_SERVER, rabbitmq_available
from tests.conftest import start_broker_process
from tests.management.rabbitmq_management_node import ManagementNode


@dataclass(frozen=True)
class MatrixBroker:
    amqp_url: str
    management_url: str


@pytest.fixture(scope="session")
def rabbitmq_matrix_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MatrixBroker]:
    """The oracle: a private RabbitMQ node with the management plugin."""
    if not rabbitmq_available():
        pytest.skip(
            f"no RabbitMQ to compare with: {RABBITMQ_SERVER} is missing (apt-get install rabbitmq-server)"
        )
    node = ManagementNode(tmp_path_factory.mktemp("rabbitmq-client-matrix"))
    node.start()
    try:
        yield MatrixBroker(node.url, node.http_url)
    finally:
        node.stop()


@pytest.fixture(scope="session")
def warrenmq_matrix_broker() -> Iterator[MatrixBroker]:
    """A WarrenMQ process with its management API on an ephemeral port."""
    broker = start_broker_process()
    try:
        yield MatrixBroker(broker.url, f"http://{broker.host}:{broker.management_port}")
    finally:
        broker.stop()
