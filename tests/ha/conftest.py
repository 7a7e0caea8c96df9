"""The HA suites run on a private PostgreSQL cluster (tests/postgres)."""

pytest_plugins = ["tests.postgres.conftest"]
