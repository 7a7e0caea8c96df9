"""The HTTP API scenario of test_compat_http.py against a fresh RabbitMQ 4.0.5 (a container of its own, as
test_compat_http.py starts a 3.10.8 node of its own) and a fresh WarrenMQ under ``--profile rabbitmq-4.0``:
the same comparison of status codes, error bodies, Location headers, key sets and the values both know.

WarrenMQ's management API follows 3.13 under every profile so far: what 4.0.5 answers differently is listed
here, one entry per difference the harness reports (docs/deviations.md, "Management API against RabbitMQ
4.0.5"), and the test fails on any difference not listed as well as on a listed one that went away."""

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
        # A request with bad credentials: 4.0.5 answers 401 without WWW-Authenticate, reason "Not_Authorized".
        "GET /api/overview: header WWW-Authenticate",
        "GET /api/overview: body",
        # Fields 4.0 added: a vhost's default_queue_type in its metadata, whoami's is_internal_user, the
        # overview's cluster and node tags, a node's being_drained.
        "GET /api/vhosts/compat-v: metadata",
        "GET /api/whoami: keys missing ['is_internal_user']",
        "GET /api/whoami: body",
        "GET /api/whoami: keys missing ['is_internal_user']",
        "GET /api/whoami: body",
        "GET /api/overview: keys missing "
        "['cluster_tags', 'default_queue_type', 'is_op_policy_updating_enabled', 'node_tags']",
        "GET /api/nodes: keys missing ['being_drained']",
        # 4.0.5 shows x-queue-type (the vhost's default, classic) in a queue's arguments, and answers an
        # inequivalent redeclaration 500 where 3.x answers 400.
        f"GET {_QUEUE}: arguments",
        f"PUT {_QUEUE}: status 500 != 400",
        # Publishing over HTTP: 4.0.5's refusal says "write access to ...", an unknown exchange is 404.
        "POST /api/exchanges/compat-v/amq.topic/publish: body",
        "POST /api/exchanges/compat-v/amq.direct/publish: body",
        "POST /api/exchanges/compat-v/amq.default/publish: body",
        "POST /api/exchanges/compat-v/nosuch/publish: status 404 != 400",
        # Queue actions (sync, cancel_sync, of classic mirrored queues, removed in 4.0): 400 on 4.0.5.
        f"POST {_QUEUE}/actions: status 400 != 204",
        f"POST {_QUEUE}/actions: status 400 != 204",
        # Bulk delete naming an unknown user: 4.0.5 answers 204.
        "POST /api/users/bulk-delete: status 204 != 400",
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
