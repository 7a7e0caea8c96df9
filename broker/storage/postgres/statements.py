"""The PostgreSQL store's statements: topology rows as the SQLite store writes them (``INSERT OR REPLACE``
becomes ``ON CONFLICT DO UPDATE``), and the hot path's array statements, one per kind of change whatever
the batch's size: binary COPY for new messages, ``unnest`` for returns and delayed messages, ``= ANY`` for
delivered marks and acks. Measured against asyncpg's ``executemany`` (a statement per row, pipelined) on 1 KiB
rows: deleting 1,000 keys took 2.9 ms with ``= ANY`` against 11.6 ms, inserting them 12.0 ms with ``unnest``
against 16.7 ms, and COPY took 7 ms against unnest's 19 ms (docs/benchmarks.md, "PostgreSQL store")."""

from __future__ import annotations

from broker.storage.base import KEY_SEQ_BITS

TOPOLOGY_SQL = {
    "vhost+": "INSERT INTO vhosts (name) VALUES ($1) ON CONFLICT DO NOTHING",
    "vhost~": "UPDATE vhosts SET metadata = $2 WHERE name = $1",
    "user+": (
        "INSERT INTO users VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET"
        " password = excluded.password, password_hash = excluded.password_hash,"
        " algorithm = excluded.algorithm, tags = excluded.tags"
    ),
    "permission+": (
        'INSERT INTO permissions VALUES ($1, $2, $3, $4, $5) ON CONFLICT ("user", vhost) DO UPDATE SET'
        " configure = excluded.configure, write = excluded.write, read = excluded.read"
    ),
    "permission-": 'DELETE FROM permissions WHERE "user" = $1 AND vhost = $2',
    "topic_permission+": (
        "INSERT INTO topic_permissions VALUES ($1, $2, $3, $4, $5)"
        ' ON CONFLICT ("user", vhost, exchange) DO UPDATE SET write = excluded.write, read = excluded.read'
    ),
    "topic_permission-": 'DELETE FROM topic_permissions WHERE "user" = $1 AND vhost = $2 AND exchange = $3',
    "exchange+": (
        "INSERT INTO exchanges VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (vhost, name) DO UPDATE SET"
        " type = excluded.type, auto_delete = excluded.auto_delete, internal = excluded.internal,"
        " arguments = excluded.arguments"
    ),
    "queue+": (
        "INSERT INTO queues VALUES ($1, $2, $3, $4, $5, 0) ON CONFLICT (id) DO UPDATE SET"
        " vhost = excluded.vhost, name = excluded.name, auto_delete = excluded.auto_delete,"
        " arguments = excluded.arguments, had_consumer = 0"
    ),
    "queue~": "UPDATE queues SET had_consumer = 1 WHERE id = $1",
    "parameter+": (
        "INSERT INTO runtime_parameters VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (vhost, component, name) DO UPDATE SET value = excluded.value"
    ),
    "parameter-": "DELETE FROM runtime_parameters WHERE vhost = $1 AND component = $2 AND name = $3",
    "binding+": "INSERT INTO bindings VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
    "binding-": (
        "DELETE FROM bindings WHERE vhost = $1 AND source = $2 AND destination_type = $3"
        " AND destination = $4 AND routing_key = $5 AND arguments = $6"
    ),
}
DELETES = {
    "exchange-": (
        "DELETE FROM delayed_messages WHERE vhost = $1 AND holder = $2",  # the plugin drops them with it
        "DELETE FROM exchanges WHERE vhost = $1 AND name = $2",
    ),
    "queue-": (
        f"DELETE FROM messages WHERE key >= $1::bigint << {KEY_SEQ_BITS}"
        f" AND key < ($1::bigint + 1) << {KEY_SEQ_BITS}",
        "DELETE FROM bindings WHERE destination_type = 'queue'"
        " AND (vhost, destination) IN (SELECT vhost, name FROM queues WHERE id = $1)",
        "DELETE FROM queues WHERE id = $1",
    ),
    "vhost-": (
        f"DELETE FROM messages WHERE key >> {KEY_SEQ_BITS} IN (SELECT id FROM queues WHERE vhost = $1)",
        "DELETE FROM queues WHERE vhost = $1",
        "DELETE FROM bindings WHERE vhost = $1",
        "DELETE FROM exchanges WHERE vhost = $1",
        "DELETE FROM delayed_messages WHERE vhost = $1",
        "DELETE FROM permissions WHERE vhost = $1",
        "DELETE FROM topic_permissions WHERE vhost = $1",
        "DELETE FROM vhosts WHERE name = $1",
        "DELETE FROM runtime_parameters WHERE vhost = $1",
    ),
    "user-": (
        'DELETE FROM permissions WHERE "user" = $1',
        'DELETE FROM topic_permissions WHERE "user" = $1',
        "DELETE FROM users WHERE name = $1",
    ),
}
# The hot path: one statement per kind of change, whatever the batch's size.
# Not SQL: the store sends a batch's new messages with binary COPY (asyncpg's copy_records_to_table) when
# there are at least COPY_FROM_ROWS of them; COPY and the delete before it cost two more round trips than one
# upsert, which a small batch (one message in flight) feels more than the per-row cost.
COPY_MESSAGES = "COPY messages"
COPY_FROM_ROWS = 32
INSERT_MESSAGES = (
    "INSERT INTO messages (key, exchange, routing_key, header, body, expires_at, delivered)"
    " SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $6::bigint[],"
    " $7::int[]) ON CONFLICT (key) DO UPDATE SET exchange = excluded.exchange,"
    " routing_key = excluded.routing_key, header = excluded.header, body = excluded.body,"
    " expires_at = excluded.expires_at, delivered = excluded.delivered, delivery_count = 0"
)
MESSAGE_COLUMNS = ("key", "exchange", "routing_key", "header", "body", "expires_at", "delivered")
MARK_DELIVERED = "UPDATE messages SET delivered = 1 WHERE key = ANY($1::bigint[])"
COUNT_RETURNS = (
    "UPDATE messages AS m SET delivery_count = r.count, delivered = r.delivered"
    " FROM unnest($1::bigint[], $2::int[], $3::int[]) AS r(key, count, delivered) WHERE m.key = r.key"
)
DELETE_MESSAGES = "DELETE FROM messages WHERE key = ANY($1::bigint[])"
INSERT_DELAYED = (
    "INSERT INTO delayed_messages SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[],"
    " $5::text[], $6::text[], $7::bytea[], $8::bytea[]) ON CONFLICT (key) DO UPDATE SET"
    " vhost = excluded.vhost, holder = excluded.holder, due_ms = excluded.due_ms,"
    " exchange = excluded.exchange, routing_key = excluded.routing_key, header = excluded.header,"
    " body = excluded.body"
)
DELETE_DELAYED = "DELETE FROM delayed_messages WHERE key = ANY($1::bigint[])"
DELETE_RANGE = "DELETE FROM messages WHERE key >= $1 AND key < $2"
# The fence, sent with BEGIN: the lease row read FOR KEY SHARE (broker/ha cannot move the epoch on while this
# transaction holds it: the epoch is a key, schema migration 2, so changing it needs FOR UPDATE, which waits
# for KEY SHARE), and an error of our own SQLSTATE when a newer active node holds the store. KEY SHARE, not
# SHARE: the renewal changes only lease_until (FOR NO KEY UPDATE, which KEY SHARE lets through), so the
# active node's renewal never queues behind its own commits; PostgreSQL's "Row-Level Locks" table.
FENCED_SQLSTATE = "WQF01"
FENCE = (
    "DO $fence$ DECLARE held bigint; BEGIN"
    " SELECT epoch INTO held FROM warrenmq_leader WHERE id = 1 FOR KEY SHARE;"
    " IF held IS DISTINCT FROM $epoch THEN"
    " RAISE EXCEPTION 'epoch % holds the store, this node''s epoch $epoch is stale',"
    " coalesce(held::text, 'none')"
    f" USING ERRCODE = '{FENCED_SQLSTATE}'; END IF; END $fence$"
)
