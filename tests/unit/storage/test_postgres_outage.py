"""Which PostgreSQL failures the writer rides out (the server out of reach) and which stay fatal:
built as asyncpg builds them from the server's ErrorResponse (its SQLSTATE), or as the socket raises them."""

from __future__ import annotations

import asyncpg
import pytest

from broker.storage.postgres.outage import is_unreachable
from broker.storage.postgres.statements import FENCED_SQLSTATE


def _server_error(sqlstate: str) -> BaseException:
    error: BaseException = asyncpg.PostgresError.new({"C": sqlstate, "M": "from the server"})
    return error


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        ConnectionResetError(104, "Connection reset by peer"),
        TimeoutError(),
        asyncpg.InterfaceError("connection is closed"),
        asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
        _server_error("08006"),  # connection_failure
        _server_error("57P01"),  # admin_shutdown: pg_ctl stop -m fast
        _server_error("57P02"),  # crash_shutdown
        _server_error("57P03"),  # cannot_connect_now: still starting
        _server_error("57014"),  # query_canceled: statement_timeout
    ],
    ids=repr,
)
def test_the_server_out_of_reach_is_unreachable(error: BaseException) -> None:
    assert is_unreachable(error)


@pytest.mark.parametrize(
    "error",
    [
        _server_error("23505"),  # unique_violation: the batch itself is wrong
        _server_error("42P01"),  # undefined_table
        _server_error("53100"),  # disk_full: the server answers; retrying would not help soon
        _server_error(FENCED_SQLSTATE),  # a successor holds the store: depose at once
        ValueError("a bug of ours"),
    ],
    ids=repr,
)
def test_a_refused_or_fenced_batch_is_not(error: BaseException) -> None:
    assert not is_unreachable(error)
