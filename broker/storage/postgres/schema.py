"""The PostgreSQL store's schema: versioned migrations applied at start, recorded in ``warrenmq_schema``.

MIGRATIONS[n] brings version n to n + 1; never edit a released step, append. Migration 1 creates everything
the SQLite store holds (broker.storage.sqlite, at its version 4) plus what a shared store needs: stream
segments as rows (a standby on another machine reads them; no local files), and ``warrenmq_leader``, the
lease row the leadership work (broker/ha) writes and whose epoch `PostgresStore.fence` checks in every
commit.

Several nodes may start against one database at once (an active and its standby): the migrations run under
a transaction-scoped advisory lock, so one applies them and the others find them applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.storage.base import StorageError

if TYPE_CHECKING:
    import asyncpg

# pg_advisory_xact_lock key for schema changes: "WRMQ" as in the SQLite store's application_id.
MIGRATION_LOCK = 0x57524D51

MIGRATIONS: list[str] = [
    """
    CREATE TABLE vhosts (name text PRIMARY KEY, metadata text);
    CREATE TABLE users (
        name text PRIMARY KEY, password text, password_hash text, algorithm text, tags text
    );
    CREATE TABLE permissions (
        "user" text NOT NULL, vhost text NOT NULL, configure text NOT NULL, write text NOT NULL,
        read text NOT NULL, PRIMARY KEY ("user", vhost)
    );
    CREATE TABLE topic_permissions (
        "user" text NOT NULL, vhost text NOT NULL, exchange text NOT NULL, write text NOT NULL,
        read text NOT NULL, PRIMARY KEY ("user", vhost, exchange)
    );
    CREATE TABLE exchanges (
        vhost text NOT NULL, name text NOT NULL, type text NOT NULL,
        auto_delete integer NOT NULL, internal integer NOT NULL, arguments text,
        PRIMARY KEY (vhost, name)
    );
    CREATE TABLE queues (
        id bigint PRIMARY KEY, vhost text NOT NULL, name text NOT NULL,
        auto_delete integer NOT NULL, arguments text, had_consumer integer NOT NULL DEFAULT 0,
        UNIQUE (vhost, name)
    );
    CREATE TABLE bindings (
        vhost text NOT NULL, source text NOT NULL, destination_type text NOT NULL,
        destination text NOT NULL, routing_key text NOT NULL, arguments text NOT NULL
    );
    -- The arguments by digest: a btree entry cannot hold a long x-match table whole.
    CREATE UNIQUE INDEX bindings_identity
        ON bindings (vhost, source, destination_type, destination, routing_key, md5(arguments));
    CREATE TABLE runtime_parameters (
        vhost text NOT NULL, component text NOT NULL, name text NOT NULL, value text NOT NULL,
        PRIMARY KEY (vhost, component, name)
    );
    -- key = queue id << 40 | publish position (broker.storage.base.message_key): a queue is a key range.
    CREATE TABLE messages (
        key bigint PRIMARY KEY, exchange text NOT NULL, routing_key text NOT NULL,
        header bytea NOT NULL, body bytea NOT NULL, expires_at bigint, delivered integer NOT NULL,
        delivery_count integer NOT NULL DEFAULT 0
    );
    CREATE TABLE delayed_messages (
        key bigint PRIMARY KEY, vhost text NOT NULL, holder text NOT NULL, due_ms bigint NOT NULL,
        exchange text NOT NULL, routing_key text NOT NULL, header bytea NOT NULL, body bytea NOT NULL
    );
    CREATE INDEX delayed_messages_holder ON delayed_messages (vhost, holder);
    CREATE TABLE meta (name text PRIMARY KEY, value bigint NOT NULL);
    -- Stream logs: a segment's totals (its seal in the file format) and its chunks, one per stream per
    -- commit, in broker.storage.stream_files' chunk encoding.
    CREATE TABLE stream_segments (
        queue_id bigint NOT NULL, first_offset bigint NOT NULL, skipped integer NOT NULL,
        count bigint NOT NULL, body_bytes bigint NOT NULL, last_ms bigint NOT NULL,
        counted_bytes bigint NOT NULL, PRIMARY KEY (queue_id, first_offset)
    );
    CREATE TABLE stream_chunks (
        queue_id bigint NOT NULL, first_offset bigint NOT NULL, segment_first bigint NOT NULL,
        first_ms bigint NOT NULL, count integer NOT NULL, chunk bytea NOT NULL,
        PRIMARY KEY (queue_id, first_offset)
    );
    ALTER TABLE stream_chunks ALTER COLUMN chunk SET STORAGE EXTERNAL;
    CREATE TABLE IF NOT EXISTS warrenmq_leader (
        id smallint PRIMARY KEY CHECK (id = 1), epoch bigint NOT NULL, holder text NOT NULL,
        lease_until timestamptz NOT NULL
    );
    """,
    # The epoch as a key: an UPDATE that changes a uniquely indexed column takes FOR UPDATE, which waits for
    # the fence's FOR KEY SHARE (a commit in flight), while the renewal (lease_until only, FOR NO KEY UPDATE)
    # does not. Without it the fence would let a takeover through in the middle of a commit.
    """
    CREATE UNIQUE INDEX IF NOT EXISTS warrenmq_leader_epoch ON warrenmq_leader (epoch);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


async def migrate(connection: asyncpg.Connection, where: str) -> int:
    """Bring the database to SCHEMA_VERSION; the version it had. ``where`` names it in errors."""
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await connection.execute("CREATE TABLE IF NOT EXISTS warrenmq_schema (version integer NOT NULL)")
        version = await connection.fetchval("SELECT max(version) FROM warrenmq_schema")
        if version is None:
            # A database with tables of ours but no version row was not made by us: refuse to write it.
            foreign = await connection.fetchval(
                "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
                " AND tablename IN ('messages', 'queues', 'exchanges')"
            )
            if foreign:
                raise StorageError(f"{where} holds tables that are not a WarrenMQ store; refusing to use it")
            version = 0
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"{where} has schema version {version}, newer than this WarrenMQ ({SCHEMA_VERSION})"
            )
        for step in range(version, SCHEMA_VERSION):
            await connection.execute(MIGRATIONS[step])
            await connection.execute("INSERT INTO warrenmq_schema (version) VALUES ($1)", step + 1)
        return int(version)
