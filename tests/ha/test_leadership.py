"""Leader election on a real PostgreSQL (broker.ha.leadership): one lease row, an epoch per election, the
database's clock deciding when a lease has run out, and the active node stepping down when deposed or cut
off past its lease. Virtual time (an injected clock and sleep) wherever the node's own timing matters."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from broker.ha.leadership import Leadership, LostLeadership, Unreachable


class VirtualTime:
    """A monotonic clock that only sleeping moves forward."""

    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.001)


async def _expire_lease_in_database(dsn: str) -> None:
    """The lease runs out on the database's clock (what a paused or cut-off active node leads to)."""
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("UPDATE warrenmq_leader SET lease_until = now() - interval '1 second'")
    finally:
        await connection.close()


async def test_the_first_node_is_elected_with_epoch_1_and_a_second_waits(postgres_dsn: str) -> None:
    first, second = Leadership(postgres_dsn, "a", 30.0), Leadership(postgres_dsn, "b", 30.0)
    try:
        assert await first.try_acquire() == 1
        assert await second.try_acquire() is None
        assert await first.current() == (1, "a", True)
    finally:
        await first.close()
        await second.close()


async def test_a_standby_takes_over_once_the_lease_ran_out_and_the_epoch_moves_on(postgres_dsn: str) -> None:
    first, second = Leadership(postgres_dsn, "a", 30.0), Leadership(postgres_dsn, "b", 30.0)
    try:
        assert await first.try_acquire() == 1
        await _expire_lease_in_database(postgres_dsn)
        assert await second.try_acquire() == 2
        assert await first.current() == (2, "b", True)
        # The old holder's renewal finds another epoch: deposed, and hold() says so.
        assert await first.renew() is False
        assert await first.hold() is LostLeadership.DEPOSED
        assert await second.renew() is True
    finally:
        await first.close()
        await second.close()


async def test_renewal_keeps_a_live_lease_so_no_standby_gets_in(postgres_dsn: str) -> None:
    first, second = Leadership(postgres_dsn, "a", 30.0), Leadership(postgres_dsn, "b", 30.0)
    try:
        await first.try_acquire()
        for _ in range(3):
            assert await first.renew() is True
            assert await second.try_acquire() is None
    finally:
        await first.close()
        await second.close()


async def test_resigning_hands_over_at_once(postgres_dsn: str) -> None:
    first, second = Leadership(postgres_dsn, "a", 30.0), Leadership(postgres_dsn, "b", 30.0)
    try:
        await first.try_acquire()
        await first.resign()
        assert await second.try_acquire() == 2
    finally:
        await first.close()
        await second.close()


async def test_the_active_node_steps_down_when_it_cannot_renew_before_its_lease_runs_out(
    postgres_dsn: str,
) -> None:
    time = VirtualTime()
    reachable = True

    async def connect(dsn: str, timeout_s: float, settings: dict[str, str]) -> asyncpg.Connection:
        if not reachable:
            raise ConnectionRefusedError("the database is down")
        return await asyncpg.connect(dsn, timeout=timeout_s, server_settings=settings)

    node = Leadership(postgres_dsn, "a", 3.0, clock=time.clock, sleep=time.sleep, connect=connect)
    try:
        await node.try_acquire()
        granted_at = time.now
        reachable = False
        node._drop_connection()  # the connection is lost with the database
        assert await node.hold() is LostLeadership.LEASE_EXPIRED
        # Not before its lease ran out on its own clock, and not long after (retries every ninth of it).
        assert granted_at + 3.0 <= time.now <= granted_at + 3.0 + 1.0
    finally:
        await node.close()


async def test_a_renewal_that_succeeds_within_the_lease_keeps_the_node_active(postgres_dsn: str) -> None:
    time = VirtualTime()
    failures = 2

    async def connect(dsn: str, timeout_s: float, settings: dict[str, str]) -> asyncpg.Connection:
        nonlocal failures
        if failures:
            failures -= 1
            raise ConnectionRefusedError("the database is restarting")
        return await asyncpg.connect(dsn, timeout=timeout_s, server_settings=settings)

    node = Leadership(postgres_dsn, "a", 3.0, clock=time.clock, sleep=time.sleep, connect=connect)
    with pytest.raises(Unreachable):
        await node.try_acquire()
    with pytest.raises(Unreachable):
        await node.try_acquire()
    try:
        assert await node.try_acquire() == 1
        node._drop_connection()
        failures = 2  # the next two renewals fail, the third (still within the lease) succeeds
        renewed = 0
        real_renew = node.renew

        async def renew() -> bool:
            nonlocal renewed
            result = await real_renew()
            renewed += 1
            if renewed == 1:
                # Deposed by an operator after the outage: hold() must still return, with the reason.
                await _expire_lease_in_database(postgres_dsn)
                successor = Leadership(postgres_dsn, "b", 3.0)
                assert await successor.try_acquire() == 2
                await successor.close()
            return result

        node.renew = renew  # type: ignore[method-assign]
        assert await node.hold() is LostLeadership.DEPOSED
        assert renewed == 2
    finally:
        await node.close()


async def test_a_node_that_slept_past_its_lease_steps_down_without_renewing(postgres_dsn: str) -> None:
    time = VirtualTime()
    node = Leadership(postgres_dsn, "a", 3.0, clock=time.clock, sleep=time.sleep)
    renewals = 0
    real_renew = node.renew

    async def renew() -> bool:
        nonlocal renewals
        renewals += 1
        return await real_renew()

    node.renew = renew  # type: ignore[method-assign]
    try:
        await node.try_acquire()
        time.now += 10.0  # paused (SIGSTOP, a frozen VM): its lease ran out on its own clock
        assert await node.hold() is LostLeadership.LEASE_EXPIRED
        assert renewals == 0
    finally:
        await node.close()


async def test_a_connection_slower_than_an_attempt_still_elects(postgres_dsn: str) -> None:
    """Over a slow link (tests/ha/test_slow_link.py: 200 ms each way) opening a connection takes longer
    than an attempt (a third of the lease): the standby must still get connected, and elected."""
    lease_s = 3.0

    async def slow_connect(dsn: str, timeout_s: float, settings: dict[str, str]) -> asyncpg.Connection:
        await asyncio.sleep(lease_s / 3 * 1.5)  # the round trips of a startup and SCRAM on that link
        return await asyncpg.connect(dsn, timeout=timeout_s, server_settings=settings)

    standby = Leadership(postgres_dsn, "a", lease_s, connect=slow_connect)
    try:
        assert await asyncio.wait_for(standby.campaign(), timeout=lease_s * 3) == 1
        # The lease counts from the takeover's own statement, not from the start of connecting.
        assert standby.timer.remaining_s(time.monotonic()) > lease_s - lease_s / 3
    finally:
        await standby.close()


async def test_no_writable_server_in_the_list_is_unreachable_not_a_crash(postgres_dsn: str) -> None:
    """A replicated store's DSN names servers that all answer read-only, as during a switchover (the old
    primary demoted, the new one not yet promoted): asyncpg raises TargetServerAttributeNotMatched, which a
    standby's campaign and the active node's renewal must take as the database out of reach, and go on."""
    admin = await asyncpg.connect(postgres_dsn)
    try:
        database = postgres_dsn.rsplit("/", 1)[1]
        await admin.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
    finally:
        await admin.close()
    standby = Leadership(postgres_dsn + "?target_session_attrs=read-write", "a", 3.0)
    try:
        with pytest.raises(Unreachable):
            await standby.try_acquire()
    finally:
        await standby.close()
