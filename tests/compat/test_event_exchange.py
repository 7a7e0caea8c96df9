"""The event exchange against RabbitMQ 3.10 with rabbitmq_event_exchange enabled: the same topology changes
give the same events (routing keys, headers with RabbitMQ's names and wire types, properties, body)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_broker_process

from .rabbitmq_node import RABBITMQ_SERVER, RabbitMQNode, rabbitmq_available
from .scenarios_event_exchange import run_event_scenario

pytestmark = [pytest.mark.compat, pytest.mark.slow]

PLUGIN = "rabbitmq_event_exchange"


@pytest.fixture(scope="module")
def oracle_events_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not rabbitmq_available():
        pytest.skip(
            f"no RabbitMQ to compare with: {RABBITMQ_SERVER} is missing (apt-get install rabbitmq-server)"
        )
    node = RabbitMQNode(tmp_path_factory.mktemp("rabbitmq-events"), plugins=(PLUGIN,))
    node.start()
    try:
        yield node.url
    finally:
        node.stop()


@pytest.fixture(scope="module")
def warrenmq_events_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    plugins = Path(tmp_path_factory.mktemp("warrenmq-events")) / "enabled_plugins"
    plugins.write_text(f"[{PLUGIN}].\n")
    broker = start_broker_process("--enabled-plugins-file", str(plugins))
    try:
        yield broker.url
    finally:
        broker.stop()


def test_topology_events_match_rabbitmq(oracle_events_url: str, warrenmq_events_url: str) -> None:
    expected = run_event_scenario(oracle_events_url)
    observed = run_event_scenario(warrenmq_events_url)
    # The scenario reached its end: the exclusive queue deleted when its connection closed.
    assert expected[-1]["routing_key"] == "queue.deleted"
    assert expected[-1]["headers"]["name"] == "ee.excl"
    assert [e["routing_key"] for e in observed] == [e["routing_key"] for e in expected]
    for seen, wanted in zip(observed, expected, strict=True):
        assert _differences(seen, wanted) == {}, seen["routing_key"]


def _differences(seen: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """Field by field, headers and header types included: {field: (WarrenMQ's, RabbitMQ's)}."""
    diff: dict[str, Any] = {}
    for part in ("headers", "types"):
        for key in seen[part].keys() | wanted[part].keys():
            if seen[part].get(key) != wanted[part].get(key):
                diff[f"{part}.{key}"] = (seen[part].get(key), wanted[part].get(key))
    for key in seen.keys() - {"headers", "types"}:
        if seen[key] != wanted[key]:
            diff[key] = (seen[key], wanted[key])
    return diff
