"""pytest plugin (entry point ``pytest11: warrenmq``): an in-process WarrenMQ for the test session and a
fresh vhost per test.

Fixtures:
- ``warrenmq_broker``: the session's `BrokerThread` (one per pytest-xdist worker): ``.url``, ``.port``,
  ``.broker``, ``.vhost(name)``.
- ``warrenmq_vhost``: a `VhostHandle` on a vhost created for this test and deleted after it (its
  connections are closed with 320), so tests sharing the broker never see each other's queues.
- ``warrenmq_url``: ``amqp://guest:guest@127.0.0.1:PORT/<that vhost>``.

Options: ``--warrenmq-name-seed N`` (ini ``warrenmq_name_seed``) makes server-generated names reproducible:
the name sequence restarts from the seed at the start of every test, whatever ran before or on which worker.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from broker.testing.embed import BrokerThread
from broker.testing.handles import VhostHandle

_counter = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("warrenmq", "WarrenMQ in-process RabbitMQ double")
    group.addoption(
        "--warrenmq-name-seed",
        type=int,
        default=None,
        dest="warrenmq_name_seed",
        help="seed for server-generated queue names and consumer tags (reseeded for every test)",
    )
    parser.addini("warrenmq_name_seed", "seed for server-generated names (see --warrenmq-name-seed)")
    parser.addini(
        "warrenmq_clock",
        "'real' (default) or 'manual': with 'manual', time-based features move only when a test calls "
        "warrenmq_vhost.advance_clock(seconds)",
        default="real",
    )


def _name_seed(config: pytest.Config) -> int | None:
    option = config.getoption("warrenmq_name_seed", None)
    if option is not None:
        return int(option)
    ini = config.getini("warrenmq_name_seed")
    return int(ini) if ini not in (None, "", []) else None


@pytest.fixture(scope="session")
def warrenmq_broker(pytestconfig: pytest.Config) -> Iterator[BrokerThread]:
    """One in-memory broker for the session, on 127.0.0.1 and an ephemeral port."""
    clock = pytestconfig.getini("warrenmq_clock")
    if clock not in ("real", "manual"):
        raise pytest.UsageError(f"warrenmq_clock must be 'real' or 'manual', not {clock!r}")
    with BrokerThread(name_seed=_name_seed(pytestconfig), manual_clock=clock == "manual") as broker:
        yield broker


@pytest.fixture
def warrenmq_vhost(warrenmq_broker: BrokerThread, pytestconfig: pytest.Config) -> Iterator[VhostHandle]:
    """A vhost that exists for this test only; deleting it afterwards closes its clients with 320."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"test-{worker}-{next(_counter)}"
    seed = _name_seed(pytestconfig)
    if seed is not None:
        warrenmq_broker.reseed_names(seed)
    handle = warrenmq_broker.vhost(name)
    try:
        yield handle
    finally:
        warrenmq_broker.delete_vhost(name)


@pytest.fixture
def warrenmq_url(warrenmq_vhost: VhostHandle) -> str:
    """The AMQP URL of this test's own vhost."""
    return warrenmq_vhost.url
