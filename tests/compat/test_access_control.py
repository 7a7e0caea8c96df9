"""RabbitMQ's access-control table on AMQP, diffed against the oracle: the users and permissions of
``scenarios.access_control`` are imported into a private RabbitMQ node (rabbitmqctl import_definitions) and
given to a WarrenMQ process at boot (``--definitions``); every row's outcome, reply codes and texts included,
must be the same on both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import start_broker_process

from .frames.runs import recorded
from .rabbitmq_node import RabbitMQNode
from .scenarios import access_control
from .scenarios.kit import Ctx, normalise, tell_phase

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


def _observe(url: str, prefix: str) -> object:
    ctx = Ctx(url, prefix)
    try:
        return normalise(access_control.observe(ctx), prefix)
    finally:
        tell_phase("cleanup")
        for connection in ctx.connections:
            if connection.is_open:
                connection.close()


def test_every_row_of_the_access_control_table_matches_rabbitmq(
    rabbitmq_private_node: RabbitMQNode | None, rabbitmq_url: str, warrenmq_url: str, definitions_file: Path
) -> None:
    if rabbitmq_private_node is None:
        pytest.skip("the oracle is external: its users cannot be set up here")
    rabbitmq_private_node.ctl("import_definitions", str(definitions_file))
    # Through the frame harness's recording proxy: the frames each broker sent are compared too.
    expected, expected_frames = recorded(rabbitmq_url, "access_control", _observe, table="access")
    observed, observed_frames = recorded(warrenmq_url, "access_control", _observe, table="access")
    assert observed == expected
    difference = observed_frames.diff(expected_frames)
    assert not difference, f"frames differ (- RabbitMQ, + WarrenMQ):\n{difference}"
