"""Losing the database (PostgreSQL restarted or out of reach): which failures of a PostgreSQL commit mean "the
server cannot be reached" (the writer keeps the batch and tries again) rather than "this batch is wrong"
(fatal, as a failed SQLite commit is), and the read connection, opened again after an outage.

Unreachable: the socket failed (refused, reset, no route), the connection is gone or closed, a statement or
connect timed out, or the server said it is shutting down, crashed or is still starting (SQLSTATE class 08,
57P01-57P03) or cancelled a statement on ``statement_timeout`` (57014); and asyncpg's InternalClientError,
which is what a fast shutdown's FATAL arriving in the middle of a statement leaves behind (measured: "cannot
switch to state 12; another operation (2) is in progress" on the next statement), the connection unusable.
Everything else, a constraint violation or the fence's own WQF01 included, is not."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

# SQLSTATEs of a server that is going away or not there yet (PostgreSQL's errcodes appendix).
_UNREACHABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "57014"})


def is_unreachable(error: BaseException) -> bool:
    if isinstance(error, (OSError, TimeoutError, asyncpg.InterfaceError, asyncpg.InternalClientError)):
        return True
    if isinstance(error, asyncpg.PostgresError):
        sqlstate = getattr(error, "sqlstate", None) or ""
        return sqlstate.startswith("08") or sqlstate in _UNREACHABLE_SQLSTATES
    return False


class Reconnecting:
    """The store's read connection, opened again on first use after an outage closed it (recovery on the
    broker's loop thread, stream reads from closed segments): reads fail while the server is away
    (StoreUnreachable) and work again once it is back, with no restart."""

    def __init__(self, connection: asyncpg.Connection, connect: Callable[[], Awaitable[asyncpg.Connection]]):
        self._connection = connection
        self._connect = connect

    async def connection(self) -> asyncpg.Connection:
        if self._connection.is_closed():
            self._connection = await self._connect()
        return self._connection

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        connection = await self.connection()
        try:
            return list(await connection.fetch(query, *args))
        except BaseException as error:
            if is_unreachable(error):
                connection.terminate()
            raise

    async def fetchval(self, query: str, *args: Any) -> Any:
        rows = await self.fetch(query, *args)
        return rows[0][0] if rows else None

    @property
    def current(self) -> asyncpg.Connection:
        return self._connection

    def terminate(self) -> None:
        self._connection.terminate()
