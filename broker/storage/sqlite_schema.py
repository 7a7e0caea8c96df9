"""The SQLite store's schema (broker.storage.sqlite): the file's application id and the migrations that bring
its ``user_version`` to the current schema, applied in one transaction when the store opens."""

from __future__ import annotations

APPLICATION_ID = 0x57524D51  # "WRMQ"

# Schema migrations: MIGRATIONS[n] brings user_version n to n + 1. Never edit a released step; append.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE vhosts (name TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TABLE users (
        name TEXT PRIMARY KEY, password TEXT, password_hash TEXT, algorithm TEXT
    ) WITHOUT ROWID;
    CREATE TABLE exchanges (
        vhost TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
        auto_delete INTEGER NOT NULL, internal INTEGER NOT NULL, arguments TEXT,
        PRIMARY KEY (vhost, name)
    ) WITHOUT ROWID;
    CREATE TABLE queues (
        id INTEGER PRIMARY KEY, vhost TEXT NOT NULL, name TEXT NOT NULL,
        auto_delete INTEGER NOT NULL, arguments TEXT, had_consumer INTEGER NOT NULL DEFAULT 0,
        UNIQUE (vhost, name)
    );
    CREATE TABLE bindings (
        vhost TEXT NOT NULL, source TEXT NOT NULL, destination_type TEXT NOT NULL,
        destination TEXT NOT NULL, routing_key TEXT NOT NULL, arguments TEXT NOT NULL,
        PRIMARY KEY (vhost, source, destination_type, destination, routing_key, arguments)
    ) WITHOUT ROWID;
    CREATE TABLE messages (
        key INTEGER PRIMARY KEY, exchange TEXT NOT NULL, routing_key TEXT NOT NULL,
        header BLOB NOT NULL, body BLOB NOT NULL, expires_at INTEGER, delivered INTEGER NOT NULL
    );
    """,
    # Runtime parameters (policies, operator policies, limits, global parameters), keyed as RabbitMQ keys
    # them. IF NOT EXISTS: this step may be renumbered when merged with other steps.
    """
    CREATE TABLE IF NOT EXISTS runtime_parameters (
        vhost TEXT NOT NULL, component TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,
        PRIMARY KEY (vhost, component, name)
    ) WITHOUT ROWID;
    """,
    # 3: users' tags, vhost and topic permissions, vhost metadata. A store written before kept neither tags
    # nor permissions and enforced none: its users become administrators with full permissions in every
    # stored vhost (what they could do), and its deleted users (rows with an empty hash) go.
    """
    ALTER TABLE vhosts ADD COLUMN metadata TEXT;
    ALTER TABLE users ADD COLUMN tags TEXT;
    DELETE FROM users WHERE password_hash = '';
    UPDATE users SET tags = '["administrator"]';
    CREATE TABLE permissions (
        user TEXT NOT NULL, vhost TEXT NOT NULL, configure TEXT NOT NULL, write TEXT NOT NULL,
        read TEXT NOT NULL, PRIMARY KEY (user, vhost)
    ) WITHOUT ROWID;
    CREATE TABLE topic_permissions (
        user TEXT NOT NULL, vhost TEXT NOT NULL, exchange TEXT NOT NULL, write TEXT NOT NULL,
        read TEXT NOT NULL, PRIMARY KEY (user, vhost, exchange)
    ) WITHOUT ROWID;
    INSERT INTO permissions SELECT users.name, vhosts.name, '.*', '.*', '.*' FROM users, vhosts;
    """,
    # 4: quorum delivery counts, the messages durable x-delayed-message exchanges hold (the plugin keeps them
    # in a disc table), and the clean-shutdown mark ("meta" clean = 1 only between a clean stop and the next
    # start; a store that never had it is treated as crashed: every recovered message is redelivered).
    """
    ALTER TABLE messages ADD COLUMN delivery_count INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE delayed_messages (
        key INTEGER PRIMARY KEY, vhost TEXT NOT NULL, holder TEXT NOT NULL, due_ms INTEGER NOT NULL,
        exchange TEXT NOT NULL, routing_key TEXT NOT NULL, header BLOB NOT NULL, body BLOB NOT NULL
    );
    CREATE INDEX delayed_messages_holder ON delayed_messages (vhost, holder);
    CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

# The page size of a new file: SQLite's largest. Each message row is embedded (exchange, routing key, header,
# body: ~1.1 KiB for a 1 KiB body), so at SQLite's default 4 KiB a page holds three, and a group commit
# writes a WAL frame (two pwrites: frame header, page) per three messages; the checkpoint then reads and
# writes each page again. Larger pages cut those syscalls and the interior pages rewritten per commit. The
# writer thread's system time per persistent 1 KiB publish with confirms (perf/ab.py confirm), two runs
# each: 4 KiB 7.1-8.2 µs, 16 KiB 3.7-4.0, 32 KiB 2.9-3.0, 64 KiB 2.2-2.4. Publish -> consume -> ack each of
# persistent messages (each row deleted a commit or two after its insert, its whole page rewritten) did not
# cost more with larger pages: writer 21-23 µs per message at 4 KiB, 21-22 at 16 KiB, 15-18 at 64 KiB
# (fsync-bound). A file that exists keeps its page size (in WAL mode SQLite cannot change it): no migration.
NEW_PAGE_SIZE = 65536
