"""The raw frame scenarios (tests/compat/frames/scenarios_*.py) against RabbitMQ and WarrenMQ: every frame
each broker sent, step by step, must be equal after ``frames.normalise``; heartbeats also by their cadence."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator

import pytest

from tests.conftest import start_broker_process

from .conftest import Oracle
from .frames import scenarios_features, scenarios_methods, scenarios_preauth, scenarios_signals
from .frames.normalise import ORACLE_310
from .frames.proxy import Recording
from .frames.raw_table import RAW_SCENARIOS, raw_transcript, record_raw

pytestmark = pytest.mark.compat
__all__ = [
    "scenarios_features",
    "scenarios_methods",
    "scenarios_preauth",
    "scenarios_signals",
]  # imported to register them

PLAIN = sorted(name for name, entry in RAW_SCENARIOS.items() if not entry.plugins)
PLUGINS = sorted(name for name, entry in RAW_SCENARIOS.items() if entry.plugins)


def _assert_same(rabbitmq_url: str, amqp_url: str, name: str, release: str = ORACLE_310) -> None:
    expected = raw_transcript(rabbitmq_url, name, release)
    observed = raw_transcript(amqp_url, name, release)
    difference = observed.diff(expected)
    assert not difference, f"frames differ (- RabbitMQ {release}, + WarrenMQ):\n{difference}"


@pytest.mark.parametrize("name", PLAIN)
def test_warrenmq_sends_rabbitmqs_frames(oracle: Oracle, name: str) -> None:
    _assert_same(oracle.rabbitmq_url, oracle.warrenmq_url, name, oracle.release)


@pytest.fixture(scope="module")
def warrenmq_310_url() -> Iterator[str]:
    """WarrenMQ under the oracle's release profile: 3.13 (the default) hashes a hash-header's value, 3.10 its
    typed pair (docs/deviations.md, Version profiles), so the plugin scenarios compare like with like."""
    broker = start_broker_process("--profile", "rabbitmq-3.10", "--prometheus-port", "0")
    try:
        yield broker.url
    finally:
        broker.stop()


@pytest.mark.parametrize("name", PLUGINS)
def test_warrenmq_sends_rabbitmqs_frames_for_plugin_exchanges(
    rabbitmq_plugins_url: str, warrenmq_310_url: str, name: str
) -> None:
    _assert_same(rabbitmq_plugins_url, warrenmq_310_url, name)


def _heartbeat_spacing(recordings: list[Recording]) -> float:
    """The median time between the broker's heartbeats, in heartbeat intervals, to the nearest half."""
    sent = [event.at for event in recordings[0].events if event.direction == "S" and event.frame.kind == 8]
    assert len(sent) >= 2, f"{len(sent)} heartbeats in 3.5 s of a 2 s interval"
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent)]
    return round(statistics.median(gaps) / scenarios_features.HEARTBEAT_S * 2) / 2


def test_heartbeats_go_out_every_half_interval_as_rabbitmqs(oracle: Oracle) -> None:
    # rabbit_heartbeat sends one whenever nothing was sent for half the negotiated interval. The spacing is
    # measured on the wall clock, in units of the interval and to the nearest half, on both brokers alike.
    expected = _heartbeat_spacing(record_raw(oracle.rabbitmq_url, "heartbeats")[0])
    observed = _heartbeat_spacing(record_raw(oracle.warrenmq_url, "heartbeats")[0])
    assert (observed, expected) == (0.5, 0.5)
