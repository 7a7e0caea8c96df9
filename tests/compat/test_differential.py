"""Differential tests: every scenario runs against a real RabbitMQ and against WarrenMQ (the ``amqp_url``
broker), through the recording proxy (tests/compat/frames); what the client observed must be equal, and so
must the frames each broker sent, field by field (``frames.normalise`` says what is not compared, and why).

With ``WARRENMQ_TEST_URL`` pointing at another RabbitMQ, both sides are RabbitMQ: that checks the scenarios
themselves are deterministic.
"""

from __future__ import annotations

import pytest

from .frames.runs import scenario_run
from .scenarios import SCENARIOS

pytestmark = pytest.mark.compat


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_matches_rabbitmq(rabbitmq_url: str, amqp_url: str, name: str) -> None:
    expected, _ = scenario_run(rabbitmq_url, name)
    observed, _ = scenario_run(amqp_url, name)
    assert observed == expected


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_sends_rabbitmqs_frames(rabbitmq_url: str, amqp_url: str, name: str) -> None:
    _, expected = scenario_run(rabbitmq_url, name)
    _, observed = scenario_run(amqp_url, name)
    difference = observed.diff(expected)
    assert not difference, f"frames differ (- RabbitMQ, + WarrenMQ):\n{difference}"
