"""The client matrix: one scenario program per language and client (Go, Java, Node.js, PHP, Ruby, Rust and
Spring AMQP), each with the client library RabbitMQ users of that language use, run against RabbitMQ (the
oracle) and against WarrenMQ.

Each program connects, opens and closes channels, publishes with confirms and a mandatory return, consumes
with ack/nack/reject, does a direct reply-to round trip, idles on a 1 s heartbeat and has a publish refused;
the Java programs also recover from a connection closed by the management API, fail over across addresses
and use NIO; the Spring program does the same through Spring AMQP's abstractions (see spring/). Each prints
what its client library reported. Both brokers must give exactly the expected observation, so a difference
between them, or a shared bug, fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import MatrixBroker
from .expected import expected_observation
from .programs import BUILD_TIMEOUT_S, CLIENTS, RUN_TIMEOUT_S, ClientPrograms

# The first test of each language builds its program (cargo, go, mvn: a minute or more from an empty cache on
# two busy cores) inside the test; the build has its own timeout, which the test's must exceed.
pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.timeout(2 * BUILD_TIMEOUT_S + 2 * RUN_TIMEOUT_S),
]


@pytest.fixture(scope="session")
def client_programs(tmp_path_factory: pytest.TempPathFactory) -> ClientPrograms:
    """Programs built once per session, in a temporary folder."""
    return ClientPrograms(Path(tmp_path_factory.mktemp("client-matrix")))


@pytest.mark.parametrize("broker", ["rabbitmq", "warrenmq"])
@pytest.mark.parametrize("client", CLIENTS)
def test_client_observes_rabbitmq_behaviour(
    client_programs: ClientPrograms, request: pytest.FixtureRequest, unique: str, client: str, broker: str
) -> None:
    # Build first: a missing toolchain skips before an oracle node is started for nothing.
    client_programs.command(client)
    target: MatrixBroker = request.getfixturevalue(f"{broker}_matrix_broker")
    observed = client_programs.observe(client, target.amqp_url, unique, target.management_url)
    assert observed == expected_observation(client)
