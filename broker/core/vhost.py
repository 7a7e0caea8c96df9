"""A virtual host: its exchanges, queues and bindings, and the declare/bind/delete rules RabbitMQ applies to
them.

Checks follow rabbit_channel.erl's order so that the first error a client sees is RabbitMQ's first error.
``owner`` arguments are the calling connection (opaque), for exclusive-queue access checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from broker.core import topology_events
from broker.core.arguments import freeze_table
from broker.core.bindings import Binding, BindingTable
from broker.core.clock import Clock, ManualClock
from broker.core.dead_letter import HeaderRewriter, publish_dead_letters
from broker.core.dispatcher import Dispatcher
from broker.core.events import EventBus, Topology
from broker.core.exchange import (
    Exchange,
    check_exchange_type,
    create_exchange,
    is_reserved_name,
    reserved_name_error,
    system_exchange_deletion_error,
)
from broker.core.message import Message
from broker.core.names import NameGenerator
from broker.core.persistence import Persistence, is_durable_binding, is_durable_exchange
from broker.core.profile import DEFAULT_PROFILE, Profile
from broker.core.queue import Envelope, Queue
from broker.core.queue_args import check_queue_equivalent
from broker.core.queue_factory import new_queue
from broker.core.router import Router
from broker.core.sender_selected import rewritten, route_keys, sender_selected
from protocol.errors import ChannelError, ReplyCode, no_exchange, no_queue

# Exchanges every vhost has (RabbitMQ exchanges.md); all durable. amq.rabbitmq.trace is internal (firehose).
_SYSTEM_EXCHANGES = (
    ("amq.direct", "direct", False),
    ("amq.fanout", "fanout", False),
    ("amq.topic", "topic", False),
    ("amq.headers", "headers", False),
    ("amq.match", "headers", False),
    ("amq.rabbitmq.trace", "topic", True),
)


class VhostConnection(Protocol):
    """What the vhost needs from a connection opened on it (the session implements it)."""

    def force_close(self, text: str) -> None:
        """Close with 320 CONNECTION_FORCED and ``text`` (vhost deletion, management, shutdown)."""
        ...


def _default_exchange_refused() -> ChannelError:
    return ChannelError(ReplyCode.ACCESS_REFUSED, "operation not permitted on the default exchange")


class VirtualHost:
    """Owns the entities of one vhost. Every method raises ChannelError/HardError with RabbitMQ's code and
    text.
    """

    def __init__(
        self,
        name: str,
        dispatcher: Dispatcher,
        names: NameGenerator,
        events: EventBus | None = None,
        clock: Clock | None = None,
        profile: Profile = DEFAULT_PROFILE,
    ) -> None:
        self.name = name
        self.clock: Clock = clock if clock is not None else ManualClock()
        self.profile = profile
        # Rewrites content headers (x-death, BCC removal); set by the broker from the session layer.
        self.rewrite_header: HeaderRewriter | None = None
        self.events = events if events is not None else EventBus()
        # The durable store (set by the broker when it has one): durable entities are written through it.
        self.persistence: Persistence | None = None
        self.dispatcher = dispatcher
        self.names = names
        self.queues: dict[str, Queue] = {}
        self.exchanges: dict[str, Exchange] = {}
        self.bindings = BindingTable()
        self.router = Router(self.exchanges.get)
        # Open connections on this vhost (insertion-ordered set), so deleting the vhost can close them.
        self.connections: dict[VhostConnection, None] = {}
        self.exchanges[""] = create_exchange(
            "", "direct", durable=True, lookup_queue=self.queues.get, vhost=name
        )
        for ex_name, type_name, internal in _SYSTEM_EXCHANGES:
            self.exchanges[ex_name] = create_exchange(
                ex_name, type_name, durable=True, internal=internal, vhost=name
            )

    # -- lookups

    def exchange(self, name: str) -> Exchange:
        exchange = self.exchanges.get(name)
        if exchange is None:
            raise no_exchange(name, self.name)
        return exchange

    def queue(self, name: str, owner: object | None) -> Queue:
        """A queue the caller may use: 404 when missing, 405 when exclusive to another connection."""
        queue = self.queues.get(name)
        if queue is None:
            raise no_queue(name, self.name)
        if queue.exclusive_owner is not None and queue.exclusive_owner is not owner:
            raise self._locked(queue)
        return queue

    def _locked(self, queue: Queue) -> ChannelError:
        return ChannelError(
            ReplyCode.RESOURCE_LOCKED,
            f"cannot obtain exclusive access to locked queue '{queue.name}' in vhost '{self.name}'. "
            "It could be originally declared on another connection or the exclusive property value "
            "does not match that of the original declaration.",
        )

    # -- exchanges

    def declare_exchange(
        self,
        name: str,
        type_name: str,
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: Mapping[str, Any] | None = None,
    ) -> Exchange:
        if name == "" and passive:
            raise _default_exchange_refused()
        if passive:
            return self.exchange(name)
        check_exchange_type(type_name)  # first, even for an existing exchange (rabbit_channel)
        if name == "":
            raise _default_exchange_refused()
        args = dict(arguments or {})
        existing = self.exchanges.get(name)
        if existing is not None:
            existing.check_equivalent(type_name, durable, auto_delete, internal, args, self.name)
            return existing
        if is_reserved_name(name):
            raise reserved_name_error("exchange", name)
        exchange = create_exchange(name, type_name, durable, auto_delete, internal, args, vhost=self.name)
        self.exchanges[name] = exchange
        attach = getattr(exchange.kind, "attach", None)
        if attach is not None:
            attach(self, name)
        if self.persistence is not None and is_durable_exchange(exchange):
            self.persistence.exchange_declared(self.name, exchange)
        if self.events.observers:
            self.events.topology(
                Topology.EXCHANGE_DECLARED,
                self.name,
                exchange=name,
                type=type_name,
                durable=durable,
                arguments=args,
            )
        return exchange

    def delete_exchange(self, name: str, if_unused: bool = False) -> None:
        if name == "":
            raise _default_exchange_refused()
        if is_reserved_name(name):
            raise system_exchange_deletion_error(
                name, self.name
            )  # checked before existence, as RabbitMQ 3.10
        exchange = self.exchanges.get(name)
        if exchange is None:
            return  # idempotent, as RabbitMQ (spec deviation, reference §2 row 4)
        if if_unused and self.bindings.has_bindings_from(exchange):
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED, f"exchange '{name}' in vhost '{self.name}' in use"
            )
        self._remove_exchange(exchange)

    def _remove_exchange(self, exchange: Exchange) -> None:
        del self.exchanges[exchange.name]
        close = getattr(exchange.kind, "close", None)
        if close is not None:
            close()
        self._unbound(self.bindings.remove_source(exchange))
        removed = self.bindings.remove_destination(exchange)
        self._unbound(removed)
        if self.persistence is not None and is_durable_exchange(exchange):
            self.persistence.exchange_deleted(self.name, exchange)
        if self.events.observers:
            self.events.topology(Topology.EXCHANGE_DELETED, self.name, exchange=exchange.name)
        self._after_unbind(removed)

    def _bound(
        self, source: Exchange, destination: Queue | Exchange, routing_key: str, args: dict[str, Any]
    ) -> None:
        topology_events.bound(self.events, self.name, source, destination, routing_key, args)
        if self.persistence is not None:
            binding = Binding(source, destination, routing_key, freeze_table(args))
            if is_durable_binding(binding):
                self.persistence.binding_added(self.name, binding)

    def _unbound(self, removed: list[Binding]) -> None:
        topology_events.unbound(self.events, self.name, removed)
        if self.persistence is not None:
            for binding in removed:
                if is_durable_binding(binding):
                    self.persistence.binding_removed(self.name, binding)

    def _after_unbind(self, removed: list[Binding]) -> None:
        for binding in removed:
            self._maybe_auto_delete(binding.source)

    def _maybe_auto_delete(self, source: Exchange) -> None:
        """An auto-delete exchange goes when its last binding as a source goes (RabbitMQ exchanges.md)."""
        if (
            source.auto_delete
            and self.exchanges.get(source.name) is source
            and not self.bindings.has_bindings_from(source)
        ):
            self._remove_exchange(source)

    # -- bindings

    def _bindable_source(self, name: str) -> Exchange:
        if name == "":
            raise _default_exchange_refused()
        return self.exchange(name)

    def bind_queue(
        self,
        queue_name: str,
        exchange_name: str,
        routing_key: str,
        arguments: Mapping[str, Any] | None,
        owner: object,
    ) -> None:
        source = self._bindable_source(exchange_name)
        queue = self.queue(queue_name, owner)
        args = dict(arguments or {})
        if self.bindings.add(source, queue, routing_key, args):
            self._bound(source, queue, routing_key, args)

    def unbind_queue(
        self,
        queue_name: str,
        exchange_name: str,
        routing_key: str,
        arguments: Mapping[str, Any] | None,
        owner: object,
    ) -> None:
        if exchange_name == "":
            raise _default_exchange_refused()
        # RabbitMQ looks the binding up first: a missing queue, exchange or binding makes unbind a no-op.
        source = self.exchanges.get(exchange_name)
        queue = self.queues.get(queue_name)
        args = dict(arguments or {})
        if (
            source is None
            or queue is None
            or Binding(source, queue, routing_key, freeze_table(args)) not in self.bindings
        ):
            return
        self.queue(queue_name, owner)  # exclusive to another connection: 405
        self.bindings.remove(source, queue, routing_key, args)
        self._unbound([Binding(source, queue, routing_key, freeze_table(args))])
        self._maybe_auto_delete(source)

    def bind_exchange(
        self, destination: str, source: str, routing_key: str, arguments: Mapping[str, Any] | None
    ) -> None:
        dest_exchange = self._bindable_source(destination)
        source_exchange = self._bindable_source(source)
        args = dict(arguments or {})
        if self.bindings.add(source_exchange, dest_exchange, routing_key, args):
            self._bound(source_exchange, dest_exchange, routing_key, args)

    def unbind_exchange(
        self, destination: str, source: str, routing_key: str, arguments: Mapping[str, Any] | None
    ) -> None:
        if destination == "" or source == "":
            raise _default_exchange_refused()
        dest_exchange = self.exchanges.get(destination)
        source_exchange = self.exchanges.get(source)
        if dest_exchange is None or source_exchange is None:
            return  # missing ends: nothing to unbind (RabbitMQ 3.x is idempotent here)
        args = dict(arguments or {})
        if self.bindings.remove(source_exchange, dest_exchange, routing_key, args):
            self._unbound([Binding(source_exchange, dest_exchange, routing_key, freeze_table(args))])
            self._maybe_auto_delete(source_exchange)

    # -- queues

    def declare_queue(
        self,
        name: str,
        owner: object,
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: Mapping[str, Any] | None = None,
        server_named: bool = False,
    ) -> Queue:
        """queue.declare; ``name`` is already resolved (server-named or last-declared) by the session.

        Only client-chosen names are checked for the reserved prefix (rabbit_channel check_name), so
        redeclaring an `amq.gen-…` name non-passively is refused as in RabbitMQ.
        """
        if passive:
            queue = self.queue(name, owner)
            if queue.features is not None:
                queue.features.touch()  # a passive declare renews x-expires too (queue process stat call)
            return queue
        if not server_named and is_reserved_name(name):
            raise reserved_name_error("queue", name)
        args = dict(arguments or {})
        existing = self.queues.get(name)
        if existing is not None:
            # assert_equivalence checks exclusive ownership strictly: same owner, same exclusivity.
            if existing.exclusive_owner is not (owner if exclusive else None):
                raise self._locked(existing)
            check_queue_equivalent(existing, durable, auto_delete, args)
            if existing.features is not None:
                existing.features.touch()  # a redeclare counts as use for x-expires
            return existing
        return new_queue(self, name, owner, durable, exclusive, auto_delete, args, server_named)

    def new_queue_name(self) -> str:
        return self.names.queue_name()

    def auto_delete_queue(self, queue: Queue) -> None:
        if self.queues.get(queue.name) is queue:
            self.remove_queue(queue)

    def delete_queue(self, name: str, owner: object, if_unused: bool = False, if_empty: bool = False) -> int:
        """queue.delete: the ready count dropped; a missing queue is fine (RabbitMQ is idempotent here)."""
        queue = self.queues.get(name)
        if queue is None:
            return 0
        queue = self.queue(name, owner)
        if if_unused and queue.consumers:
            raise ChannelError(ReplyCode.PRECONDITION_FAILED, f"queue '{name}' in vhost '{self.name}' in use")
        if if_empty and queue.ready:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED, f"queue '{name}' in vhost '{self.name}' not empty"
            )
        return self.remove_queue(queue)

    def close(self) -> None:
        """The vhost is being deleted: every queue goes (its timers with it) and exchange types holding timers
        (x-delayed-message) are closed, so nothing of the vhost fires later."""
        for queue in list(self.queues.values()):
            self.remove_queue(queue)
        for exchange in list(self.exchanges.values()):
            close = getattr(exchange.kind, "close", None)
            if close is not None:
                close()

    def remove_queue(self, queue: Queue) -> int:
        """Delete unconditionally (exclusive owner gone, auto-delete): bindings die with it, consumers
        cancelled.
        """
        self.queues.pop(queue.name, None)
        removed = self.bindings.remove_destination(queue)
        self._unbound(removed)
        self._after_unbind(removed)
        if queue.store is not None:
            queue.store.queue_deleted(queue)
        if self.events.observers:
            topology_events.dropped(self.events, self.name, queue, list(queue.ready), "queue_deleted")
            self.events.topology(Topology.QUEUE_DELETED, self.name, queue=queue.name)
        return queue.delete()

    def purge_queue(self, name: str, owner: object) -> int:
        queue = self.queue(name, owner)
        if self.events.observers:
            topology_events.dropped(self.events, self.name, queue, list(queue.ready), "purged")
        return queue.purge()

    # -- publishing

    def publish(self, exchange_name: str, message: Message) -> tuple[list[Queue], bool]:
        """Route and enqueue: (queues reached, empty = unroutable; whether an x-overflow reject-publish queue
        refused the message, so the publisher's confirm is a nack). A plain tuple: this runs per message."""
        exchange = self.exchanges.get(exchange_name)
        if exchange is None:
            raise no_exchange(exchange_name, self.name)
        if exchange.internal:
            raise ChannelError(
                ReplyCode.ACCESS_REFUSED,
                f"cannot publish to internal exchange '{exchange_name}' in vhost '{self.name}'",
            )
        # Only queues are bound as non-exchange destinations, so the router's destinations are queues.
        queues = cast("list[Queue]", self.router.route(exchange, message))
        headers = message.headers
        if headers is not None and ("CC" in headers or "BCC" in headers):
            queues, message = sender_selected(self.router, exchange, message, queues, self.rewrite_header)
        rejected = False
        for queue in queues:
            if not queue.enqueue(message):
                rejected = True
        return queues, rejected

    # -- QueueHost (broker.core.queue_features)

    def dead_letter(self, queue: Queue, envelopes: list[Envelope], reason: str) -> None:
        publish_dead_letters(self, queue, envelopes, reason)

    def publish_held(self, exchange_name: str, message: Message) -> None:
        """A delayed message is due (x-delayed-message): route it now; gone if the exchange was deleted."""
        if exchange_name in self.exchanges:
            self.publish(exchange_name, message)

    def expire_queue(self, queue: Queue) -> None:
        if self.queues.get(queue.name) is queue:
            self.remove_queue(queue)

    def with_delivery_count(self, message: Message, count: int) -> Message:
        """The message as quorum queues redeliver it: with the ``x-delivery-count`` header set."""
        if self.rewrite_header is None:
            return message
        return rewritten(message, self.rewrite_header, {"x-delivery-count": count})

    def route_keys(self, exchange: Exchange, message: Message, keys: list[str]) -> list[Queue]:
        return route_keys(self.router, exchange, message, keys)
