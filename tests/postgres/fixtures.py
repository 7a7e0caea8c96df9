"""Session-scoped PostgreSQL fixtures (tests/postgres/cluster.py): one private cluster per test session,
skipped with the reason when PostgreSQL is not installed.

``postgres_cluster`` is the cluster (stop/start it for outage tests, but take a cluster of your own for that
when other tests in the session share it); ``postgres_dsn`` a fresh empty database on it for each test.
tests/conftest.py imports them, so every suite has them (a module, not a conftest: pytest no longer takes
``pytest_plugins`` below the top-level conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.postgres.cluster import PostgresCluster, unavailable


def running_cluster() -> Iterator[PostgresCluster]:
    """A private cluster, started, destroyed at the end (the test is skipped without PostgreSQL)."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    cluster = PostgresCluster.create()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    yield from running_cluster()


@pytest.fixture
def postgres_dsn(postgres_cluster: PostgresCluster) -> str:
    if not postgres_cluster.running():
        postgres_cluster.start()
    return postgres_cluster.create_database()
