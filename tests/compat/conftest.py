"""Fixtures for the differential suite: a private RabbitMQ node (the oracle) started once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Oracle:
    """A RabbitMQ release to compare with and the WarrenMQ that stands beside it. ``release`` is what the
    frame comparison's listed deviations are keyed on (frames/normalise.py)."""

    release: str
    rabbitmq_url: str
    warrenmq_url: str


# The releases every differential suite parametrized over ``oracle`` compares with: Debian bookworm's 3.10.8
# beside WarrenMQ's default profile (3.13: the differences are listed deviations), and Debian trixie's 4.0.5
# in a container beside WarrenMQ under --profile rabbitmq-4.0.
ORACLES = ("3.10", "4.0")


@pytest.fixture(params=ORACLES, ids=[f"rabbitmq-{release}" for release in ORACLES])
def oracle(request: pytest.FixtureRequest) -> Oracle:
    release: str = request.param
    if release == "3.10":
        return Oracle(release, request.getfixturevalue("rabbitmq_url"), request.getfixturevalue("amqp_url"))
    return Oracle(
        release, request.getfixturevalue("rabbitmq4_url"), request.getfixturevalue("warrenmq_40_url")
    )
