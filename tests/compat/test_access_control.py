"""RabbitMQ's access-control table on AMQP, diffed against the oracle: the users and permissions of
``scenarios.access_control`` are imported into a private RabbitMQ node (rabbitmqctl import_definitions) and
given to a WarrenMQ process at boot (``--definitions``); every row's outcome, reply codes and texts included,
must be the same on both."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import start_broker_process

from .rabbitmq_node import RabbitMQNode
from .scenarios import access_control
from .scenarios.kit import Ctx, normalise

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def definitions_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("access") / "definitions.json"
    path.write_text(json.dumps(access_control.definitions()))
    return path


@pytest.fixture(scope="module")
def warrenmq_url(definitions_file: Path) -> Iterator[str]:
    broker = start_broker_process("--definitions", str(definitions_file))
    try:
        yield broker.url
    finally:
        broker.stop()


def _observe(url: str) -> object:
    prefix = f"acl{uuid.uuid4().hex[:10]}"
    ctx = Ctx(url, prefix)
    try:
        return normalise(access_control.observe(ctx), prefix)
    finally:
        for connection in ctx.connections:
            if connection.is_open:
                connection.close()


def test_every_row_of_the_access_control_table_matches_rabbitmq(
    rabbitmq_private_node: RabbitMQNode | None, rabbitmq_url: str, warrenmq_url: str, definitions_file: Path
) -> None:
    if rabbitmq_private_node is None:
        pytest.skip("the oracle is external: its users cannot be set up here")
    rabbitmq_private_node.ctl("import_definitions", str(definitions_file))
    expected = _observe(rabbitmq_url)
    observed = _observe(warrenmq_url)
    assert observed == expected
