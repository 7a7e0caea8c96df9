"""Server-side limits on the PostgreSQL sessions a node opens, derived from the HA lease, so that a node cut
off from the database (a network partition: no FIN, no RST, its sockets simply go silent) cannot keep its
locks past the lease.

Why it matters: every commit of the active node holds the lease row ``FOR KEY SHARE`` (the fence,
broker.storage.postgres.statements.FENCE) from its BEGIN to its COMMIT, and a standby's takeover changes the
row's epoch, which waits for that lock. When the partition falls between BEGIN and COMMIT, PostgreSQL sees
the session "idle in transaction" and, left alone, keeps it (and the lock) until the kernel's TCP keepalive
gives up: two hours with Linux's defaults. The standby would not take over before the partition heals.

The limits, with a lease of L seconds (3 by default) and an election attempt every L/3:

- every session: TCP keepalives after L/3 seconds of silence, probes a second apart, the connection dead after
  two unanswered (so a backend blocked reading from a silent client, in the middle of a COPY say, ends within
  about L/3 + 2 s), and ``tcp_user_timeout`` of one lease for data the server sent and nobody acknowledged;
- the store's sessions: ``idle_in_transaction_session_timeout`` of L/3. A deposed node's open transaction is
  ended at most L/3 after it went silent, so a takeover that becomes due when the lease runs out waits at most
  L/3 more. A live transaction is never idle that long: its statements are sent back to back from one
  coroutine (broker.storage.postgres.store), so the idle gaps are one round trip each. No
  ``statement_timeout`` there: a legitimately long statement (dropping a vhost's million messages) must not
  be cancelled and retried for ever, and a silent client in the middle of one is what the keepalives catch;
- the election's session (broker/ha): ``lock_timeout`` and ``statement_timeout`` of half an attempt (L/6).
  The server must give up on a statement before the node's own timeout (one attempt, L/3) does: a takeover
  that waited on a lock and committed after its node had given up would elect an epoch that nobody holds,
  and the lease it took would stand unused for a whole lease before the next attempt could take it.

Every parameter here is a user-settable one that PostgreSQL 12 and later know (``tcp_user_timeout`` came in
12); they go in the startup packet (asyncpg's ``server_settings``), so they hold from the first statement.
"""

from __future__ import annotations

import math

# The default lease (broker.config's ha_lease_s), for a store opened without one (tests, tools).
DEFAULT_LEASE_S = 3.0


def _keepalives(lease_s: float) -> dict[str, str]:
    return {
        "tcp_keepalives_idle": str(max(1, math.ceil(lease_s / 3))),  # whole seconds only
        "tcp_keepalives_interval": "1",
        "tcp_keepalives_count": "2",
        "tcp_user_timeout": str(max(1000, round(lease_s * 1000))),  # milliseconds
    }


def store_settings(lease_s: float = DEFAULT_LEASE_S) -> dict[str, str]:
    """``server_settings`` for the store's writer and reader sessions."""
    return {
        **_keepalives(lease_s),
        "idle_in_transaction_session_timeout": str(max(100, round(lease_s / 3 * 1000))),  # milliseconds
    }


def election_settings(lease_s: float = DEFAULT_LEASE_S) -> dict[str, str]:
    """``server_settings`` for the election's session (its takeover, renewal and resignation)."""
    half_attempt_ms = str(max(50, round(lease_s / 6 * 1000)))
    return {**_keepalives(lease_s), "lock_timeout": half_attempt_ms, "statement_timeout": half_attempt_ms}
