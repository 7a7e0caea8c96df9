"""Scaffolding shared by the storage tests: a hand-run event loop, commit waiters that record what they saw,
and messages built the way the session builds them (a real content-header payload)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pamqp import commands

from broker.core.model.expiration import parse_expiration
from broker.core.model.message import Message
from broker.storage.base import Store
from protocol.codec import encode_header_payload
from protocol.content_header import parse_content_header
from tests.unit.core.fakes import ManualLoop

__all__ = ["ManualLoop", "Waiter", "make_message", "snapshot"]


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
