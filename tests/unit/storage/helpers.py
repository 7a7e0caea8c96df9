"""Scaffolding shared by the storage tests: a hand-run event loop, commit waiters that record what they saw,
and messages built the way the session builds them (a real content-header payload)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

from pamqp import commands

from broker.core.model.expiration import parse_expiration
from broker.core.model.message import Message
from broker.storage.base import Store
from broker.storage.sqlite import SqliteStore
from protocol.codec import encode_header_payload
from protocol.content_header import parse_content_header
from tests.unit.core.fakes import ManualLoop

__all__ = ["DurableStores", "ManualLoop", "Waiter", "abandon", "make_message", "snapshot"]


class Waiter:
    """A `CommitWaiter` that records, when called, the name it was given and whatever ``probe`` returns."""

    def __init__(self, name: str, log: list[tuple[str, Any]], probe: Callable[[], Any] = lambda: None):
        self.name = name
        self.log = log
        self.probe = probe

    def committed(self) -> None:
        self.log.append((self.name, self.probe()))


def make_message(exchange: str, routing_key: str, body: bytes, **properties: Any) -> Message:
    """A message as ``ChannelSession._published`` makes it from a publisher's content header."""
    payload = encode_header_payload(len(body), commands.Basic.Properties(**properties))
    info = parse_content_header(payload)
    ttl = None if info.expiration is None else parse_expiration(info.expiration)
    return Message(
        exchange,
        routing_key,
        payload,
        body,
        info.headers,
        info.delivery_mode or 1,
        info.priority,
        info.expiration,
        ttl,
    )


def snapshot(store: Store, queue_ids: int = 7) -> dict[str, Any]:
    """What a store would hand to recovery, with the orders that are not part of the contract removed."""
    definitions = store.load()
    return {
        "vhosts": sorted(definitions.vhosts),
        "users": sorted(definitions.users, key=repr),
        "exchanges": sorted(definitions.exchanges, key=repr),
        "queues": definitions.queues,  # in id order: recovery declares them in that order
        "bindings": sorted(definitions.bindings, key=repr),
        "permissions": sorted(definitions.permissions, key=repr),
        "topic_permissions": sorted(definitions.topic_permissions, key=repr),
        "vhost_metadata": definitions.vhost_metadata,
        "messages": {queue_id: list(store.messages(queue_id)) for queue_id in range(queue_ids)},
    }


class DurableStores:
    """Where durable stores of one kind live: ``fresh()`` a new empty location (a temporary directory for
    SQLite, a new database on the session's private PostgreSQL cluster), ``open(location)`` the store there
    (again after a close, as the next broker run opens it)."""

    def __init__(self, kind: str, cluster: Any = None) -> None:
        self.kind = kind
        self.cluster = cluster

    def fresh(self) -> str:
        if self.kind == "sqlite":
            return tempfile.mkdtemp(prefix="warrenmq-store-")
        return str(self.cluster.create_database())

    def open(self, location: str) -> Store:
        if self.kind == "sqlite":
            return SqliteStore(location, fsync="never")
        from broker.storage.postgres.store import PostgresStore

        return PostgresStore(location)


def abandon(store: Store) -> None:
    """What kill -9 leaves: nothing more runs (no clean mark), the store's resources are simply dropped (a
    PostgreSQL transaction in progress is rolled back by the server when its connection goes)."""
    if isinstance(store, SqliteStore):
        store.db.close()
        store._lock.close()
        return
    from broker.storage.postgres.store import PostgresStore

    if isinstance(store, PostgresStore):

        async def drop() -> None:
            store._writer.terminate()
            store._reader.terminate()

        store._loop.run(drop())
        store._loop.stop()
