"""The PostgreSQL store (issue #30): `broker.storage.postgres.store.PostgresStore`, opened by the composition
root only when ``--store postgresql://...`` is configured (asyncpg is imported then, never at start-up
otherwise)."""
