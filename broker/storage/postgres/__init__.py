"""The PostgreSQL store, the durable state that high-availability nodes share:
`broker.storage.postgres.store.PostgresStore`, opened by the composition root only when ``--store
postgresql://...`` is configured (asyncpg is imported then, never at start-up otherwise)."""
