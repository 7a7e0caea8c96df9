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


# Scenarios whose observation differs from an oracle's in a listed deviation (docs/deviations.md, Deliberate
# deviations, with its profile): expected to fail, strictly, so that the entry goes once the difference does.
OBSERVED_DEVIATIONS: dict[tuple[str, str], str] = {}
FRAME_DEVIATIONS = OBSERVED_DEVIATIONS


def _expect_listed(
    request: pytest.FixtureRequest, listed: dict[tuple[str, str], str], key: tuple[str, str]
) -> None:
    if key in listed:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"listed deviation: {listed[key]}"))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_matches_rabbitmq(request: pytest.FixtureRequest, oracle: Oracle, name: str) -> None:
    _expect_listed(request, OBSERVED_DEVIATIONS, (oracle.release, name))
    expected, _ = scenario_run(oracle.rabbitmq_url, name, oracle.release)
    observed, _ = scenario_run(oracle.warrenmq_url, name, oracle.release)
    assert observed == expected


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_sends_rabbitmqs_frames(request: pytest.FixtureRequest, oracle: Oracle, name: str) -> None:
    _expect_listed(request, FRAME_DEVIATIONS, (oracle.release, name))
    _, expected = scenario_run(oracle.rabbitmq_url, name, oracle.release)
    _, observed = scenario_run(oracle.warrenmq_url, name, oracle.release)
    difference = observed.diff(expected)
    assert not difference, f"frames differ (- RabbitMQ, + WarrenMQ):\n{difference}"
