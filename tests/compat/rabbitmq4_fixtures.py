"""Fixtures of the RabbitMQ 4.0.5 oracle, shared by tests/compat and tests/management (tests/conftest.py
imports them): one container per test process (each xdist worker), started once per session as the 3.10.8
oracle is, and WarrenMQ on the profile that emulates it, ``--profile rabbitmq-4.0``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from .rabbitmq4_node import RabbitMQ4Node, image_problem

if TYPE_CHECKING:
    from tests.conftest import BrokerProcess

PROFILE_40 = "rabbitmq-4.0"


@pytest.fixture(scope="session")
def rabbitmq4_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RabbitMQ4Node]:
    """RabbitMQ 4.0.5 with the management plugin; skips with the reason when its image cannot be made."""
    problem = image_problem()
    if problem is not None:
        pytest.skip(problem)
    node = RabbitMQ4Node(tmp_path_factory.mktemp("rabbitmq4"))
    node.start()
    try:
        yield node
    finally:
        node.stop()


@pytest.fixture(scope="session")
def rabbitmq4_url(rabbitmq4_node: RabbitMQ4Node) -> str:
    return rabbitmq4_node.url


@pytest.fixture(scope="session")
def warrenmq_40() -> Iterator[BrokerProcess]:
    """WarrenMQ under ``--profile rabbitmq-4.0``, with its management API on an ephemeral port."""
    from tests.conftest import start_broker_process  # tests/conftest.py imports this module

    broker = start_broker_process("--profile", PROFILE_40)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def warrenmq_40_url(warrenmq_40: BrokerProcess) -> str:
    return warrenmq_40.url
