"""``durable_stores``: each durable store kind in turn, SQLite and PostgreSQL (the latter on the session's
private cluster, tests/postgres; skipped when PostgreSQL is not installed). ``reopen``: each store kind,
memory included, as successive broker runs open it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.storage.base import Store
from broker.storage.memory import MemoryStore
from tests.unit.storage.helpers import DurableStores


@pytest.fixture(params=["sqlite", "postgresql"])
def durable_stores(request: pytest.FixtureRequest) -> DurableStores:
    if request.param == "sqlite":
        return DurableStores("sqlite")
    return DurableStores("postgresql", request.getfixturevalue("postgres_cluster"))


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A function giving the store as the next broker run opens it (the same object for the memory store,
    the same directory for SQLite, the same database for PostgreSQL)."""
    memory = MemoryStore()
    opened: list[Store] = []
    durable = None
    if request.param != "memory":
        durable = DurableStores(
            request.param,
            request.getfixturevalue("postgres_cluster") if request.param == "postgresql" else None,
        )
        location = str(tmp_path) if request.param == "sqlite" else durable.fresh()

    def open_store() -> Store:
        store: Store = memory if durable is None else durable.open(location)
        store.threaded = False  # applied inline: the hand-run loop cannot wait for a writer thread
        opened.append(store)
        return store

    yield open_store
    if durable is not None:
        try:
            opened[-1].close()
        except Exception:
            pass  # closed by the test already
