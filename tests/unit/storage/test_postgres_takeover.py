"""A PostgreSQL store opened by a standby and used only when it is elected, maybe long after: what a run of
the HA pair on a replicated PostgreSQL found (tests/ha/test_replicated_store.py). The standby's sessions had
died with the primary they were opened on; elected after the promotion, its begin() failed on the dead writer
session, it exited, and its close marked the store clean: the next node then trusted delivered marks the
crashed node had never written, and a message its consumer had already had came back without
``redelivered``."""

from __future__ import annotations

import time

import asyncpg
import pytest

from broker.storage.postgres.store import PostgresStore
from tests.postgres.cluster import PostgresCluster
from tests.unit.storage.helpers import abandon


@pytest.fixture
def dsn(postgres_cluster: PostgresCluster) -> str:
    return postgres_cluster.create_database()


def test_a_run_that_never_began_leaves_a_crashed_predecessor_unclean(dsn: str) -> None:
    crashed = PostgresStore(dsn)
    crashed.begin()
    abandon(crashed)  # kill -9: "not clean" stays recorded
    never_began = PostgresStore(dsn)  # a standby, elected, that stopped before its recovery began
    never_began.close(clean=True)  # nothing pending, nothing failed: a "clean" close of its own
    successor = PostgresStore(dsn)
    try:
        assert successor.begin() is False  # the crash is still seen: every message comes back redelivered
    finally:
        successor.close()


async def test_a_store_whose_sessions_died_still_begins(dsn: str) -> None:
    store = PostgresStore(dsn)
    try:
        database = dsn.rsplit("/", 1)[1]
        admin = await asyncpg.connect(dsn)
        try:
            # What a promotion leaves a standby's sessions: ended by a server that is gone.
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = $1 AND pid <> pg_backend_pid()",
                database,
            )
        finally:
            await admin.close()
        deadline = time.monotonic() + 10
        # The store's own loop has read the server's goodbye on both sessions.
        while not (store._writer.is_closed() and store._reader.current.is_closed()):
            assert time.monotonic() < deadline, "the sessions were not seen closed"
            time.sleep(0.02)
        assert store.begin() is False  # reconnected for begin()'s mark instead of failing the election
    finally:
        store.close()
