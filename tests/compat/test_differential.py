"""Differential tests: every scenario runs against a real RabbitMQ and against WarrenMQ (the ``amqp_url``
broker); what the client observed must be equal.

With ``WARRENMQ_TEST_URL`` pointing at another RabbitMQ, both sides are RabbitMQ: that checks the scenarios
themselves are deterministic.
"""

from __future__ import annotations

import pytest

from .scenarios import SCENARIOS, run_scenario

pytestmark = pytest.mark.compat


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_matches_rabbitmq(rabbitmq_url: str, amqp_url: str, name: str) -> None:
    expected = run_scenario(rabbitmq_url, name)
    observed = run_scenario(amqp_url, name)
    assert observed == expected
