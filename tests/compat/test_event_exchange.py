"""The event exchange against RabbitMQ 3.10 with rabbitmq_event_exchange enabled: the same topology changes
give the same events (routing keys, headers with RabbitMQ's names and wire types, properties, body)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_broker_process
from tests.management.rabbitmq_management_node import ManagementNode

from .frames.compare import Transcript
from .frames.runs import recorded
from .rabbitmq_node import RABBITMQ_SERVER, RabbitMQNode, rabbitmq_available
from .scenarios_event_exchange import run_admin_scenario, run_event_scenario

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


class _EventsManagementNode(ManagementNode):
    """The oracle with the management API too, to drive users, vhosts, policies and limits over HTTP."""

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        env["RABBITMQ_ENABLED_PLUGINS"] = f"rabbitmq_management,{PLUGIN}"
        return env


@pytest.fixture(scope="module")
def oracle_admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    if not rabbitmq_available():
        pytest.skip(
            f"no RabbitMQ to compare with: {RABBITMQ_SERVER} is missing (apt-get install rabbitmq-server)"
        )
    node = _EventsManagementNode(tmp_path_factory.mktemp("rabbitmq-admin-events"))
    node.start()
    try:
        yield node.url, node.http_url
    finally:
        node.stop()


@pytest.fixture(scope="module")
def warrenmq_admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    plugins = Path(tmp_path_factory.mktemp("warrenmq-admin-events")) / "enabled_plugins"
    plugins.write_text(f"[rabbitmq_management,{PLUGIN}].\n")
    broker = start_broker_process("--enabled-plugins-file", str(plugins), "--data-dir", "none")
    try:
        yield broker.url, f"http://127.0.0.1:{broker.management_port}"
    finally:
        broker.stop()


def _topology_run(url: str) -> tuple[Any, Transcript]:
    """run_event_scenario through the recording proxy (cached): the events, and the frames."""
    return recorded(url, "topology", lambda proxy_url, _prefix: run_event_scenario(proxy_url), "events")


def _admin_run(admin: tuple[str, str]) -> tuple[Any, Transcript]:
    """run_admin_scenario through the recording proxy (cached); the HTTP calls go to the broker directly."""
    url, http = admin
    return recorded(url, "admin", lambda proxy_url, _prefix: run_admin_scenario(proxy_url, http), "events")


def test_topology_events_match_rabbitmq(oracle_events_url: str, warrenmq_events_url: str) -> None:
    expected, _ = _topology_run(oracle_events_url)
    observed, _ = _topology_run(warrenmq_events_url)
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


def test_user_vhost_policy_parameter_connection_events_match_rabbitmq(
    oracle_admin: tuple[str, str], warrenmq_admin: tuple[str, str]
) -> None:
    expected, _ = _admin_run(oracle_admin)
    observed, _ = _admin_run(warrenmq_admin)
    assert expected[-1]["routing_key"] in ("user.deleted", "connection.closed", "channel.closed")
    # In order up to the vhost's deletion (after the lingering connection's channel.created); RabbitMQ
    # deletes the vhost's exchanges in Mnesia's order and closes its connections asynchronously, WarrenMQ
    # closes them first: from there on as a multiset.
    split_expected, split_observed = _split(expected), _split(observed)
    assert [e["routing_key"] for e in observed[:split_observed]] == [
        e["routing_key"] for e in expected[:split_expected]
    ]
    for seen, wanted in zip(observed[:split_observed], expected[:split_expected], strict=True):
        assert _differences(seen, wanted) == {}, seen["routing_key"]
    assert _sorted(observed[split_observed:]) == _sorted(expected[split_expected:])


def _split(events: list[dict[str, Any]]) -> int:
    return 1 + max(i for i, event in enumerate(events) if event["routing_key"] == "channel.created")


def _sorted(events: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(event, sort_keys=True) for event in events)


def test_topology_event_frames_match_rabbitmq(oracle_events_url: str, warrenmq_events_url: str) -> None:
    _, expected = _topology_run(oracle_events_url)
    _, observed = _topology_run(warrenmq_events_url)
    difference = observed.diff(expected)
    assert not difference, f"frames differ (- RabbitMQ, + WarrenMQ):\n{difference}"


def test_admin_event_frames_match_rabbitmq(
    oracle_admin: tuple[str, str], warrenmq_admin: tuple[str, str]
) -> None:
    _, expected = _admin_run(oracle_admin)
    _, observed = _admin_run(warrenmq_admin)
    # As the events are compared: in order up to the lingering connection's channel.created, from the vhost's
    # deletion on as a multiset of (basic.get-ok, content header) pairs, whose delivery tag and message count
    # follow the order.
    in_order_expected, rest_expected = _split_frames(expected.lines)
    in_order_observed, rest_observed = _split_frames(observed.lines)
    # The scenario drains the capture queue while RabbitMQ is still publishing events to it (asynchronously,
    # through rabbit_event): how many are left behind each get-ok is timing, its order is not.
    in_order_expected, in_order_observed = _uncounted(in_order_expected), _uncounted(in_order_observed)
    difference = Transcript(in_order_observed).diff(Transcript(in_order_expected))
    assert not difference, f"frames differ (- RabbitMQ, + WarrenMQ):\n{difference}"
    # RabbitMQ races its own vhost supervisor when it closes the vhost's connections: "is deleted", or "is
    # down" when the vhost's processes stopped first (seen under load). WarrenMQ says what happened;
    # RabbitMQ's other word is read as the same frame.
    rest_expected = [_vhost_down_as_deleted(line) for line in rest_expected]
    difference = Transcript(rest_observed).diff(Transcript(rest_expected))
    assert not difference, f"frames after the vhost's deletion differ (- RabbitMQ, + WarrenMQ):\n{difference}"


_VHOST_DOWN = re.compile(r'"size":(\d+)(,.*"CONNECTION_FORCED - vhost \'[^\']*\' )is down"')


def _vhost_down_as_deleted(line: str) -> str:
    """RabbitMQ's "vhost 'v' is down" close as its "is deleted" one (three octets longer)."""
    return _VHOST_DOWN.sub(lambda m: f'"size":{int(m.group(1)) + 3}{m.group(2)}is deleted"', line)


_MESSAGE_COUNT = re.compile(r'\["message_count","long",\d+\]')


def _uncounted(lines: list[str]) -> list[str]:
    return [_MESSAGE_COUNT.sub('["message_count","long","<count>"]', line) for line in lines]


_ORDER_FIELDS = re.compile(r'\["(delivery_tag|message_count)","(longlong|long)",\d+\]')


def _split_frames(lines: list[str]) -> tuple[list[str], list[str]]:
    last = max(n for n, line in enumerate(lines) if '"channel.created"' in line and "Basic.GetOk" in line)
    head, tail = lines[: last + 2], lines[last + 2 :]
    pairs = [
        _ORDER_FIELDS.sub(r'["\1","\2","<order>"]', line) + "\n" + (tail[n + 1] if n + 1 < len(tail) else "")
        if "Basic.GetOk" in line
        else line
        for n, line in enumerate(tail)
        if "Basic.GetOk" in line or not (n > 0 and "Basic.GetOk" in tail[n - 1])
    ]
    return head, sorted(pairs)
