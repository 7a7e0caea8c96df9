"""The exchanges and bindings of a virtual host, and the declare/bind/delete rules RabbitMQ applies to them.

`broker.core.topology.vhost.VirtualHost` builds on this with its queues and publishing. Checks follow
rabbit_channel's order so that the first error a client sees is RabbitMQ's first error. ``owner`` arguments
are the calling connection (opaque), for exclusive-queue access checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.core.events import lifecycle_notices, topology_events
from broker.core.events.events import EventBus
from broker.core.exchanges.bindings import Binding, BindingTable
from broker.core.exchanges.exchange import (
    Exchange,
    check_exchange_type,
    create_exchange,
    is_reserved_name,
    reserved_name_error,
    system_exchange_deletion_error,
)
from broker.core.exchanges.router import Router
from broker.core.model.arguments import freeze_table
from broker.core.model.event_types import Topology
from broker.core.model.profile import DEFAULT_PROFILE, Profile
from broker.core.policies.policies import PolicyTable
from broker.core.policies.policy_apply import apply_to_exchange
from broker.core.queues.queue import Queue
from broker.core.topology.persistence import Persistence, is_durable_binding, is_durable_exchange
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


def default_exchange_refused() -> ChannelError:
    return ChannelError(ReplyCode.ACCESS_REFUSED, "operation not permitted on the default exchange")


class VhostTopology:
    """The exchanges, the bindings and the queue lookups of one vhost. Every method raises
    ChannelError/HardError with RabbitMQ's code and text."""

    def __init__(self, name: str, events: EventBus | None) -> None:
        self.name = name
        self.events = events if events is not None else EventBus()
        # The durable store (set by the broker when it has one): durable entities are written through it.
        self.persistence: Persistence | None = None
        # Every vhost's policies (the broker's table, set by the broker); None: no policies apply.
        self.policies: PolicyTable | None = None
        # Plugin exchange types whose plugin is not enabled (set by the broker from enabled_plugins).
        self.disabled_exchange_types: frozenset[str] = frozenset()
        # The RabbitMQ release followed (`broker.core.topology.vhost.VirtualHost` sets the broker's).
        self.profile: Profile = DEFAULT_PROFILE
        self.queues: dict[str, Queue] = {}
        self.exchanges: dict[str, Exchange] = {}
        self.bindings = BindingTable()
        self.router = Router(self.exchanges.get)
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
            raise default_exchange_refused()
        if passive:
            return self.exchange(name)
        check_exchange_type(
            type_name, self.disabled_exchange_types
        )  # first, even for an existing exchange (rabbit_channel)
        if name == "":
            raise default_exchange_refused()
        args = dict(arguments or {})
        existing = self.exchanges.get(name)
        if existing is not None:
            existing.check_equivalent(type_name, durable, auto_delete, internal, args, self.name)
            return existing
        if is_reserved_name(name):
            raise reserved_name_error("exchange", name)
        exchange = create_exchange(
            name, type_name, durable, auto_delete, internal, args, vhost=self.name, profile=self.profile
        )
        self.exchanges[name] = exchange
        if self.policies is not None:
            apply_to_exchange(self.policies, self.name, exchange)
        # Not ``durable``: that is the declared flag, which exchange.created reports whether or not a store
        # keeps the exchange (RabbitMQ's event carries the exchange record's durable field).
        stored = self.persistence is not None and is_durable_exchange(exchange)
        attach = getattr(exchange.kind, "attach", None)
        if attach is not None:
            # The VirtualHost this is part of (a DelayHost: clock, publish_held) and, for a durable exchange,
            # the store that keeps what it holds.
            attach(self, name, self.persistence if stored else None)
        if stored:
            assert self.persistence is not None
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
            raise default_exchange_refused()
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
        if self.events.notices:
            with lifecycle_notices.exchange_deletion(self.events, self.name, name):
                self._remove_exchange(exchange)
        else:
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
            raise default_exchange_refused()
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
            raise default_exchange_refused()
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
        # rabbit_binding looks the source up first: with both ends missing, the 404 names the source.
        source_exchange = self._bindable_source(source)
        dest_exchange = self._bindable_source(destination)
        args = dict(arguments or {})
        if self.bindings.add(source_exchange, dest_exchange, routing_key, args):
            self._bound(source_exchange, dest_exchange, routing_key, args)

    def unbind_exchange(
        self, destination: str, source: str, routing_key: str, arguments: Mapping[str, Any] | None
    ) -> None:
        if destination == "" or source == "":
            raise default_exchange_refused()
        dest_exchange = self.exchanges.get(destination)
        source_exchange = self.exchanges.get(source)
        if dest_exchange is None or source_exchange is None:
            return  # missing ends: nothing to unbind (RabbitMQ 3.x is idempotent here)
        args = dict(arguments or {})
        if self.bindings.remove(source_exchange, dest_exchange, routing_key, args):
            self._unbound([Binding(source_exchange, dest_exchange, routing_key, freeze_table(args))])
            self._maybe_auto_delete(source_exchange)
