"""Fixtures for the differential suite: a private RabbitMQ node (the oracle) started once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .rabbitmq_node import RABBITMQ_SERVER, RabbitMQNode, rabbitmq_available


@pytest.fixture(scope="session")
def rabbitmq_private_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RabbitMQNode | None]:
    """The private oracle node, or None when ``WARRENMQ_COMPAT_RABBITMQ_URL`` names an external one."""
    if os.environ.get("WARRENMQ_COMPAT_RABBITMQ_URL"):
        yield None
        return
    if not rabbitmq_available():
        pytest.skip(
            f"no RabbitMQ to compare with: {RABBITMQ_SERVER} is missing (apt-get install rabbitmq-server)"
        )
    node = RabbitMQNode(tmp_path_factory.mktemp("rabbitmq"))
    node.start()
    try:
        yield node
    finally:
        node.stop()


@pytest.fixture(scope="session")
def rabbitmq_url(rabbitmq_private_node: RabbitMQNode | None) -> str:
    """The oracle: ``WARRENMQ_COMPAT_RABBITMQ_URL`` if set, else a private node from the Debian package."""
    if rabbitmq_private_node is None:
        return os.environ["WARRENMQ_COMPAT_RABBITMQ_URL"]
    return rabbitmq_private_node.url


# The plugin exchange types WarrenMQ implements, enabled on a second private node (the shared one stays
# plugin-free, as the other scenarios expect).
ORACLE_PLUGINS = (
    "rabbitmq_consistent_hash_exchange",
    "rabbitmq_recent_history_exchange",
    "rabbitmq_sharding",
)


@pytest.fixture(scope="session")
def rabbitmq_plugins_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An oracle with ``ORACLE_PLUGINS`` enabled: ``WARRENMQ_COMPAT_RABBITMQ_PLUGINS_URL`` if set, else a
    private node from the Debian package."""
    external = os.environ.get("WARRENMQ_COMPAT_RABBITMQ_PLUGINS_URL")
    if external:
        yield external
        return
    if not rabbitmq_available():
        pytest.skip(
            f"no RabbitMQ to compare with: {RABBITMQ_SERVER} is missing (apt-get install rabbitmq-server)"
        )
    node = RabbitMQNode(tmp_path_factory.mktemp("rabbitmq-plugins"), plugins=ORACLE_PLUGINS)
    node.start()
    try:
        yield node.url
    finally:
        node.stop()
