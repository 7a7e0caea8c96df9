"""What the core tells a durable store, and which entities and messages are durable (RabbitMQ's rules).

The core calls these hooks as state changes; ``broker/storage`` implements them by collecting the writes
of one loop turn into one transaction (group commit). Without a store (``Broker(persistence=None)``) every
hook site costs one attribute check. Publisher confirms and ``tx.commit-ok`` for persistent messages wait
for the commit of the batch that holds them (``batch_id``, ``committed_id``, ``on_commit``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from broker.core.exchanges.bindings import Binding
from broker.core.exchanges.delayed import DelayStore
from broker.core.exchanges.exchange import Exchange
from broker.core.queues.queue import Queue, QueueStore


class CommitWaiter(Protocol):
    def committed(self) -> None:
        """Called on the loop once the batch the waiter registered for is durable."""
        ...


class Persistence(QueueStore, DelayStore, Protocol):
    """Write-behind of durable state; every call is cheap and never blocks (the store batches)."""

    # A counter of message and topology writes: a caller compares it before and after an operation to learn
    # whether that operation wrote anything it must wait for.
    writes: int

    @property
    def batch_id(self) -> int:
        """The batch collecting this loop turn's writes."""
        ...

    @property
    def committed_id(self) -> int:
        """The newest batch known to be committed (batches commit in order)."""
        ...

    def on_commit(self, batch_id: int, waiter: CommitWaiter) -> None:
        """Call ``waiter.committed()`` once ``batch_id`` has committed."""
        ...

    # -- topology (durable entities only: the core checks with the predicates below)

    def vhost_added(self, name: str) -> None: ...

    def vhost_deleted(self, name: str) -> None: ...

    def user_saved(
        self,
        name: str,
        password: str | None,
        password_hash: tuple[str, str] | None,
        tags: tuple[str, ...] = (),
    ) -> None: ...

    def user_deleted(self, name: str) -> None:
        """The user goes, with its permissions and topic permissions."""
        ...

    def permission_saved(self, user: str, vhost: str, configure: str, write: str, read: str) -> None: ...

    def permission_cleared(self, user: str, vhost: str) -> None: ...

    def topic_permission_saved(self, user: str, vhost: str, exchange: str, write: str, read: str) -> None: ...

    def topic_permission_cleared(self, user: str, vhost: str, exchange: str) -> None: ...

    def vhost_metadata_saved(self, name: str, metadata: Mapping[str, Any]) -> None:
        """Description, tags and default queue type, as RabbitMQ keeps them with the vhost."""
        ...

    def parameter_saved(self, vhost: str, component: str, name: str, value: Any) -> None:
        """A runtime parameter (policy, operator_policy, vhost-limits; user-limits and global with vhost "")
        was set to ``value`` (JSON-able), or removed when ``value`` is None."""
        ...

    def exchange_declared(self, vhost: str, exchange: Exchange) -> None: ...

    def exchange_deleted(self, vhost: str, exchange: Exchange) -> None: ...

    def queue_declared(self, queue: Queue) -> None:
        """Also gives the queue its ``store_id`` (the key of its messages in the store)."""
        ...

    def binding_added(self, vhost: str, binding: Binding) -> None: ...

    def binding_removed(self, vhost: str, binding: Binding) -> None: ...

    # The queue's own calls (queue_consumed, queue_deleted and the messages'): see QueueStore; a durable
    # delayed-message exchange's: see DelayStore.


def is_durable_queue(queue: Queue) -> bool:
    """RabbitMQ recovers durable queues; exclusive ones die with their connection even when durable."""
    return queue.durable and queue.exclusive_owner is None


def is_durable_exchange(exchange: Exchange) -> bool:
    return exchange.durable and not exchange.name.startswith("amq.") and exchange.name != ""


def is_durable_binding(binding: Binding) -> bool:
    """A binding is durable when both ends are (rabbit_binding: durable(Src) andalso durable(Dst))."""
    source, destination = binding.source, binding.destination
    if not source.durable:
        return False
    if binding.is_e2e:
        return bool(getattr(destination, "durable", False))
    queue: Queue = destination  # type: ignore[assignment]
    return is_durable_queue(queue)
