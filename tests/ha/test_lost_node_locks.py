"""A node cut off from the database holds nothing past its lease: its commit's lock on the lease row dies
with its session, so the standby takes over within the lease (plus a third of it), partition healed or not;
the active node's renewal never waits for its own commits; and a takeover that gave up leaves nothing waiting
in the server that could elect an epoch nobody holds. Real PostgreSQL, real store and election code; the
partition is a proxy that goes silent after the store sends a commit's fence (tests/ha/silent_proxy.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import asyncpg
import pytest

from broker.ha.leadership import Leadership, Unreachable
from broker.storage.base import Batch, StorageError, message_key
from broker.storage.postgres.statements import FENCE
from broker.storage.postgres.store import PostgresStore
from tests.ha.silent_proxy import SilentProxy
from tests.postgres.cluster import PostgresCluster
from tests.unit.storage.helpers import make_message

LEASE_S = 3.0
HEADER = make_message("ex", "rk", b"", delivery_mode=2).header_payload


@pytest.fixture
def proxy(postgres_cluster: PostgresCluster) -> Iterator[SilentProxy]:
    proxy = SilentProxy(postgres_cluster.host, postgres_cluster.port)
    yield proxy
    proxy.close()


async def _wait_for(condition_sql: str, dsn: str, timeout_s: float) -> None:
    """Poll ``condition_sql`` (a boolean query) until true; AssertionError at the deadline."""
    deadline = time.monotonic() + timeout_s
    connection = await asyncpg.connect(dsn)
    try:
        while not await connection.fetchval(condition_sql):
            assert time.monotonic() < deadline, f"not true within {timeout_s} s: {condition_sql}"
            await asyncio.sleep(0.05)
    finally:
        await connection.close()


async def test_a_node_cut_off_in_the_middle_of_a_commit_does_not_hold_the_takeover_past_the_lease(
    postgres_dsn: str, proxy: SilentProxy
) -> None:
    active, standby = Leadership(postgres_dsn, "a", LEASE_S), Leadership(postgres_dsn, "b", LEASE_S)
    store = PostgresStore(proxy.dsn(postgres_dsn), LEASE_S)
    failed: list[BaseException] = []

    def commit() -> None:
        row = (message_key(1, 1), "", "q", HEADER, b"body", None, 0)
        try:
            store.apply(Batch(1, topology=[("queue+", (1, "/", "q", 0, None))], added={row[0]: row}))
        except StorageError as error:
            failed.append(error)

    committing = threading.Thread(target=commit, daemon=True)
    try:
        epoch = await active.try_acquire()
        assert epoch == 1
        store.fence(epoch)
        proxy.cut_after(b"$fence$")  # the partition falls after BEGIN and the fence, before the COMMIT
        committing.start()
        cut_at = time.monotonic()
        # The server holds the session idle in its transaction, the lease row locked by the fence.
        await _wait_for(
            "SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'idle in transaction'"
            " AND query LIKE '%$fence$%'",
            postgres_dsn,
            timeout_s=10,
        )
        # The cut-off node renews no more; the standby campaigns as a standby does.
        elected = await asyncio.wait_for(standby.campaign(), timeout=LEASE_S + 5)
        took_s = time.monotonic() - cut_at
        assert elected == 2
        # Due when the lease ran out (at most LEASE_S after the cut), held at most a third of it longer by the
        # dead session, and an attempt every third of the lease: without the server-side limits it waited
        # until the partition healed.
        assert took_s <= LEASE_S + LEASE_S / 3 + LEASE_S / 3 + 0.5, took_s
        proxy.close()  # ends the cut-off connections, so the stuck commit returns
        committing.join(timeout=30)
        assert failed, "the cut-off node's commit must fail"
        rows = await _fetchval(postgres_dsn, "SELECT count(*) FROM messages")
        assert rows == 0  # and it never landed: its session was ended, its transaction rolled back
    finally:
        proxy.close()
        if committing.is_alive():
            committing.join(timeout=30)
        store.close(clean=False)
        await active.close()
        await standby.close()


async def test_the_renewal_does_not_wait_for_a_commit_but_a_takeover_does(postgres_dsn: str) -> None:
    active, standby = Leadership(postgres_dsn, "a", LEASE_S), Leadership(postgres_dsn, "b", LEASE_S)
    PostgresStore(postgres_dsn).close()  # the schema, the epoch's key included
    commit = await asyncpg.connect(postgres_dsn)
    try:
        epoch = await active.try_acquire()
        assert epoch is not None
        # A commit of the active node in flight: BEGIN and the store's own fence, the transaction left open.
        await commit.execute("BEGIN; " + FENCE.replace("$epoch", str(epoch)))
        started = time.monotonic()
        assert await active.renew() is True
        assert time.monotonic() - started < 0.5  # no wait for the commit's lock
        # The lease runs out on the database's clock while the commit is still open: the takeover waits for
        # the commit (the fence) and gives up, on the server's side too, before the standby's attempt ends.
        await _expire_lease(postgres_dsn)
        with pytest.raises(Unreachable):
            await standby.try_acquire()
        waiting = await commit.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        assert waiting == 0  # nothing left behind that could take the row once the commit ends
        await commit.execute("ROLLBACK")
        # The standby's next attempt is the one that takes the row (a takeover left waiting in the server
        # would have taken it first, an epoch nobody holds, and this attempt would find its lease live).
        assert await standby.try_acquire() == epoch + 1
    finally:
        await commit.close()
        await active.close()
        await standby.close()


async def _fetchval(dsn: str, sql: str) -> object:
    connection = await asyncpg.connect(dsn)
    try:
        return await connection.fetchval(sql)
    finally:
        await connection.close()


async def _expire_lease(dsn: str) -> None:
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("UPDATE warrenmq_leader SET lease_until = now() - interval '1 second'")
    finally:
        await connection.close()
