"""Leader election on the shared PostgreSQL store: one ``warrenmq_leader`` row holding the active node's
epoch and lease, on a connection of its own (never the store's, so a long commit cannot starve a renewal),
with server-side lock and statement timeouts shorter than an attempt (broker.storage.postgres.sessions).

A standby tries to take the row every third of a lease; it succeeds when the row is missing or its lease
has run out *by the database's clock* (``lease_until < now()``), and each success increments the epoch.
The active node renews the row where the epoch is still its own; it steps down when a renewal finds another
epoch (deposed) or when it could not renew before its lease ran out on its own clock (``LeaseTimer``).
Correctness does not rest on these timings: the store checks the epoch inside every commit
(``PostgresStore.fence``), so a node that lags behind its deposition still cannot commit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

import structlog

from broker.ha.lease import LeaseTimer
from broker.storage.postgres.sessions import election_settings

if TYPE_CHECKING:
    import asyncpg

log = structlog.get_logger("warrenmq.ha")

# The table the store's first migration creates too (the agreed fencing contract): one row, id 1.
LEADER_DDL = (
    "CREATE TABLE IF NOT EXISTS warrenmq_leader (id smallint PRIMARY KEY CHECK (id = 1), "
    "epoch bigint NOT NULL, holder text NOT NULL, lease_until timestamptz NOT NULL)"
)
# One statement, so taking the row is atomic: take it over once its lease has run out on the database's clock,
# or insert it when there is none; either way the epoch moves on, and RETURNING says whether this node got it.
# An UPDATE, not INSERT ... ON CONFLICT DO UPDATE ... WHERE: ON CONFLICT locks the row before it evaluates its
# WHERE, so every attempt against a live lease would queue behind the active node's commits (their fence
# holds the row FOR KEY SHARE); an UPDATE locks only a row whose lease has lapsed in its snapshot, and
# rechecks that on the row's newest version once the lock is granted (PostgreSQL's EvalPlanQual).
_ACQUIRE = (
    "WITH taken AS (UPDATE warrenmq_leader SET epoch = epoch + 1, holder = $1,"
    " lease_until = now() + make_interval(secs => $2) WHERE id = 1 AND lease_until < now() RETURNING epoch),"
    " first AS (INSERT INTO warrenmq_leader (id, epoch, holder, lease_until)"
    " SELECT 1, 1, $1, now() + make_interval(secs => $2) WHERE NOT EXISTS (SELECT FROM warrenmq_leader)"
    " ON CONFLICT (id) DO NOTHING RETURNING epoch)"
    " SELECT epoch FROM taken UNION ALL SELECT epoch FROM first"
)
_RENEW = (
    "UPDATE warrenmq_leader SET lease_until = now() + make_interval(secs => $2) "
    "WHERE id = 1 AND epoch = $1 RETURNING epoch"
)
# A clean stop hands over at once: the standby's next attempt finds the lease over.
_RESIGN = "UPDATE warrenmq_leader SET lease_until = '-infinity' WHERE id = 1 AND epoch = $1"


class LostLeadership(Enum):
    """Why the active node steps down (its log line names it)."""

    DEPOSED = "deposed"  # a renewal found another epoch: a successor was elected
    LEASE_EXPIRED = "lease_expired"  # the database could not be reached before the lease ran out


Connect = Callable[[str, float, dict[str, str]], Awaitable["asyncpg.Connection"]]


async def _asyncpg_connect(dsn: str, timeout_s: float, server_settings: dict[str, str]) -> asyncpg.Connection:
    import asyncpg

    return await asyncpg.connect(dsn, timeout=timeout_s, server_settings=server_settings)


def _unreachable() -> tuple[type[BaseException], ...]:
    """What the database out of reach raises: the socket's errors, a timeout, the server's, and asyncpg's
    InternalClientError, which is what a multi-host DSN with ``target_session_attrs=read-write`` raises when
    every server answers read-only (a switchover between a demotion and a promotion)."""
    import asyncpg

    return (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError)


class Unreachable(Exception):
    """The database did not answer (connection refused or lost, or no answer within the time left)."""


class Leadership:
    """This node's side of the election. ``campaign()`` returns once elected (the epoch), ``hold()`` returns
    why leadership was lost; both run in the node's loop. ``clock`` is monotonic seconds (injectable)."""

    def __init__(
        self,
        dsn: str,
        holder: str,
        lease_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        connect: Connect = _asyncpg_connect,
    ) -> None:
        if lease_s <= 0:
            raise ValueError("the lease must be positive")
        self.dsn = dsn
        self.holder = holder
        self.lease_s = lease_s
        self.clock = clock
        self.sleep = sleep
        self._connect = connect
        self.timer = LeaseTimer(lease_s)
        self.epoch: int | None = None
        self._connection: asyncpg.Connection | None = None
        # Statements prepared with the connection (`_connected`), by their SQL.
        self._prepared: dict[str, asyncpg.prepared_stmt.PreparedStatement] = {}

    @property
    def retry_s(self) -> float:
        """How often a standby tries, and how often the active node renews: a third of the lease."""
        return self.lease_s / 3

    async def _connected(self, timeout_s: float) -> asyncpg.Connection:
        """The election's own connection, opened (and the table made) when there is none; Unreachable when
        that takes over ``timeout_s``. Opening costs several round trips (the startup, SCRAM's two, the DDL):
        over a slow link (200 ms each way) more than an attempt's third of a lease, so a standby bounded by
        its attempt never connected at all. Its callers give it longer (a lease for a standby, what is left
        of its lease for the active node): no lease hangs on it, since a grant counts from when its own
        statement is sent, after connecting."""
        if self._connection is not None and not self._connection.is_closed():
            return self._connection
        self._connection = None
        timeout_s = max(timeout_s, 0.05)
        started = self.clock()
        try:
            connection = await asyncio.wait_for(
                self._connect(self.dsn, timeout_s, election_settings(self.lease_s)), timeout_s
            )
            self._connection = connection
            await connection.execute(LEADER_DDL, timeout=max(timeout_s - (self.clock() - started), 0.05))
            # The renewal prepared now, with the connection's own round trips: executed, it is then one round
            # trip, where a first execution also prepared it (two). Over a slow link (200 ms each way, and a
            # retransmission now and then) those two took the first renewal after an election past its
            # third of a lease, and its retry, on a new connection, could not connect within what was left.
            self._prepared = {
                _RENEW: await connection.prepare(
                    _RENEW, timeout=max(timeout_s - (self.clock() - started), 0.05)
                )
            }
        except _unreachable() as error:
            self._drop_connection()
            raise Unreachable(repr(error)) from error
        return connection

    async def _query(self, sql: str, *args: Any, timeout_s: float) -> Any:
        """``fetchval`` on the election's connection (``_connected()`` first); Unreachable when the database
        does not answer within ``timeout_s``."""
        connection = await self._connected(timeout_s)
        prepared = self._prepared.get(sql)
        try:
            if prepared is not None:
                return await prepared.fetchval(*args, timeout=max(timeout_s, 0.05))
            return await connection.fetchval(sql, *args, timeout=max(timeout_s, 0.05))
        except _unreachable() as error:
            self._drop_connection()
            raise Unreachable(repr(error)) from error

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        self._prepared = {}
        if connection is not None and not connection.is_closed():
            connection.terminate()  # no graceful close: the server may be gone

    async def try_acquire(self) -> int | None:
        """One attempt: the new epoch when this node is now active, None when another holds a live lease.
        Raises Unreachable."""
        await self._connected(self.lease_s)
        sent_at = self.clock()
        epoch = await self._query(_ACQUIRE, self.holder, self.lease_s, timeout_s=self.retry_s)
        if epoch is None:
            return None
        self.epoch = int(epoch)
        self.timer.granted(sent_at)
        return self.epoch

    async def campaign(self) -> int:
        """Try every third of a lease until elected; the epoch."""
        unreachable_logged = False
        while True:
            try:
                epoch = await self.try_acquire()
            except Unreachable as error:
                if not unreachable_logged:
                    log.warning("ha_store_unreachable", role="standby", error=str(error))
                    unreachable_logged = True
            else:
                unreachable_logged = False
                if epoch is not None:
                    return epoch
            await self.sleep(self.retry_s)

    async def renew(self) -> bool:
        """One renewal: True renewed, False deposed (the row has another epoch). Raises Unreachable."""
        assert self.epoch is not None, "renew() before campaign()"
        await self._connected(self.timer.remaining_s(self.clock()))
        sent_at = self.clock()
        timeout_s = min(self.retry_s, self.timer.remaining_s(sent_at))
        epoch = await self._query(_RENEW, self.epoch, self.lease_s, timeout_s=timeout_s)
        if epoch is None:
            return False
        self.timer.granted(sent_at)
        return True

    async def hold(self) -> LostLeadership:
        """Renew every third of the lease until leadership is lost; why."""
        while True:
            now = self.clock()
            if self.timer.expired(now):
                return LostLeadership.LEASE_EXPIRED
            wait_s = self.timer.renew_at() - now
            if wait_s > 0:
                await self.sleep(min(wait_s, self.timer.remaining_s(now)))
                continue
            if self.timer.expired(self.clock()):  # woken late (a paused process): do not renew a dead lease
                return LostLeadership.LEASE_EXPIRED
            try:
                if not await self.renew():
                    return LostLeadership.DEPOSED
            except Unreachable as error:
                log.warning(
                    "ha_store_unreachable",
                    role="active",
                    epoch=self.epoch,
                    lease_left_s=round(self.timer.remaining_s(self.clock()), 3),
                    error=str(error),
                )
                # Retry soon, within what is left of the lease.
                await self.sleep(min(self.retry_s / 3, self.timer.remaining_s(self.clock())))

    async def current(self) -> tuple[int, str, bool] | None:
        """The row as the database has it (epoch, holder, lease live), for diagnostics and tests."""
        row = await self._query(
            "SELECT ROW(epoch, holder, lease_until > now()) FROM warrenmq_leader WHERE id = 1",
            timeout_s=self.retry_s,
        )
        return None if row is None else (int(row[0]), str(row[1]), bool(row[2]))

    async def resign(self) -> None:
        """End this node's lease at once (a clean stop, after its last commit), so a standby takes over
        without waiting for the lease to run out. Best effort."""
        if self.epoch is not None:
            try:
                await self._query(_RESIGN, self.epoch, timeout_s=self.retry_s)
            except Unreachable:
                pass
            self.epoch = None

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            try:
                await asyncio.wait_for(connection.close(), self.retry_s)
            except (TimeoutError, OSError):
                connection.terminate()
