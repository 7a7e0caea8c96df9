"""Differential tests: every scenario runs against a real RabbitMQ and against WarrenMQ (the ``amqp_url``
broker), and against RabbitMQ 4.0.5 and WarrenMQ under ``--profile rabbitmq-4.0`` (the ``oracle`` fixture),
through the recording proxy (tests/compat/frames); what the client observed must be equal, and so
must the frames each broker sent, field by field (``frames.normalise`` says what is not compared, and why).

With ``WARRENMQ_TEST_URL`` pointing at another RabbitMQ, both sides are RabbitMQ: that checks the scenarios
themselves are deterministic.
"""

from __future__ import annotations

import pytest

from .conftest import Oracle
from .frames.runs import scenario_run
from .scenarios import SCENARIOS

pytestmark = pytest.mark.compat


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_matches_rabbitmq(oracle: Oracle, name: str) -> None:
    expected, _ = scenario_run(oracle.rabbitmq_url, name, oracle.release)
    observed, _ = scenario_run(oracle.warrenmq_url, name, oracle.release)
    assert observed == expected


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_sends_rabbitmqs_frames(oracle: Oracle, name: str) -> None:
    _, expected = scenario_run(oracle.rabbitmq_url, name, oracle.release)
    _, observed = scenario_run(oracle.warrenmq_url, name, oracle.release)
    difference = observed.diff(expected)
    assert not difference, f"frames differ (- RabbitMQ, + WarrenMQ):\n{difference}"
