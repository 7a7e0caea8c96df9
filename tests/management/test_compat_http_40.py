"""The HTTP API scenario of test_compat_http.py against a fresh RabbitMQ 4.0.5 (a container of its own, as
test_compat_http.py starts a 3.10.8 node of its own) and a fresh WarrenMQ under ``--profile rabbitmq-4.0``:
the same comparison of status codes, error bodies, Location headers, key sets and the values both know.

Under the 4.x profiles WarrenMQ's management API answers in 4.0's shape (the profile's management_4x,
queue_type_in_arguments and permission_in_refusals); what 4.0.5 still answers differently is listed here, one
entry per difference the harness reports (docs/deviations.md, "Management API against RabbitMQ 4.0.5"), and
the test fails on any difference not listed as well as on a listed one that went away."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.compat.rabbitmq4_fixtures import PROFILE_40
from tests.compat.rabbitmq4_node import RabbitMQ4Node, image_problem
from tests.conftest import start_broker_process
from tests.management.compat_http_scenario import SCENARIO
from tests.management.http_differential import differences

pytestmark = [pytest.mark.compat, pytest.mark.slow]

_QUEUE = "/api/queues/compat-v/compat%20q%23%C3%A9"
LISTED_40 = sorted(
    (
        # The redeclaration with another durable flag: 4.0.5 answers 500 for this queue, whose name is not
        # ASCII (400 with the inequivalence text for an ASCII name, as WarrenMQ answers both).
        f"PUT {_QUEUE}: status 500 != 400",
    )
)


def _kind(difference: str) -> str:
    """A difference without its values: the request, and which status, header, key set or key differed."""
    where, what = difference.split(": ", 1)
    words = what.split()
    if words[0] == "status":
        what = " ".join(words[:4])
    elif words[0] == "header":
        what = " ".join(words[:2])
    elif words[0] != "keys":
        what = words[0]
    return f"{where}: {what}"


@pytest.fixture(scope="module")
def bases_40(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    problem = image_problem()
    if problem is not None:
        pytest.skip(problem)
    node = RabbitMQ4Node(tmp_path_factory.mktemp("rabbitmq4-management"))
    node.start()  # the scenario lists what a fresh node holds
    warren = start_broker_process("--profile", PROFILE_40)
    try:
        yield node.http_url, f"http://127.0.0.1:{warren.management_port}"
    finally:
        warren.stop()
        node.stop()


def test_the_scenario_answers_as_rabbitmq_40_does_but_the_listed(bases_40: tuple[str, str]) -> None:
    found = differences(*bases_40, SCENARIO)
    assert sorted(_kind(difference) for difference in found) == LISTED_40, "\n".join(found)
