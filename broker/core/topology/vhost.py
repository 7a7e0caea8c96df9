"""A virtual host: its queues and publishing, on top of its exchanges and bindings (`VhostTopology`).

Checks follow rabbit_channel.erl's order so that the first error a client sees is RabbitMQ's first error.
``owner`` arguments are the calling connection (opaque), for exclusive-queue access checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from broker.core.events import topology_events
from broker.core.events.events import EventBus
from broker.core.exchanges.exchange import Exchange, is_reserved_name, reserved_name_error
from broker.core.model.acting import INTERNAL, acting
from broker.core.model.clock import Clock, ManualClock
from broker.core.model.dispatcher import Dispatcher
from broker.core.model.event_types import Topology
from broker.core.model.message import Message
from broker.core.model.names import NameGenerator
from broker.core.model.profile import DEFAULT_PROFILE, Profile
from broker.core.model.stats import ChannelStats, ChurnStats, QueueStats
from broker.core.policies.policy_apply import reapply
from broker.core.policies.runtime_parameters import RuntimeParameters
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.queue_admin import delete_queue, purge_queue
from broker.core.queues.queue_args import check_queue_equivalent
from broker.core.queues.queue_features import QueueFeatures
from broker.core.queues.queue_settings import PLAIN
from broker.core.topology.dead_letter import HeaderRewriter, publish_dead_letters
from broker.core.topology.queue_factory import new_queue
from broker.core.topology.sender_selected import rewritten, route_keys, sender_selected
from broker.core.topology.vhost_topology import VhostTopology
from protocol.errors import ChannelError, ReplyCode, internal_exchange, no_exchange

# A queue "lags" when it has consumers and more ready messages than this: each copy routed into it is
# counted in `VirtualHost.lagging_copies`, which the session charges to the publisher's flow credit
# (RabbitMQ's credit_flow: a publisher slows down to the pace of the queues it feeds).
LAGGING_BACKLOG = 1000


class VhostConnection(Protocol):
    """What the vhost needs from a connection opened on it (the session implements it)."""

    username: str

    def force_close(self, text: str) -> None:
        """Close with 320 CONNECTION_FORCED and ``text`` (vhost deletion, management, shutdown)."""
        ...


class VirtualHost(VhostTopology):
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
        super().__init__(name, events)
        self.clock: Clock = clock if clock is not None else ManualClock()
        self.profile = profile
        # Rewrites content headers (x-death, BCC removal); set by the broker from the session layer.
        self.rewrite_header: HeaderRewriter | None = None
        self.dispatcher = dispatcher
        self.names = names
        # Open connections on this vhost (insertion-ordered set), so deleting the vhost can close them.
        self.connections: dict[VhostConnection, None] = {}
        # The broker's limits and parameters (set by the broker); None: no limits.
        self.parameters: RuntimeParameters | None = None
        # The vhost's default queue type (its metadata's `default_queue_type`; set by the broker); None: none.
        self.default_queue_type: str | None = None
        # Statistics (broker.core.model.stats): the broker shares one churn record among its vhosts; channels
        # that closed leave their message_stats here so the vhost's totals survive them (as RabbitMQ's do).
        self.churn = ChurnStats()
        self.channel_totals = ChannelStats()
        # Deleted queues leave their disk_reads/disk_writes here: the vhost's counts are cumulative, as
        # RabbitMQ's vhost_msg_rates are.
        self.deleted_queue_totals = QueueStats()
        self.dead_lettered: dict[tuple[str, str, str], int] = {}  # (reason, queue type, strategy) -> count
        # Copies enqueued into lagging queues, ever: a session reads it around one socket read (flow credit),
        # so the publish path pays one test per queue it already touches and no second walk.
        self.lagging_copies = 0

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
        self.churn.queue_declared += 1
        if passive:
            queue = self.queue(name, owner)
            if queue.features is not None:
                queue.features.touch()  # a passive declare renews x-expires too (queue process stat call)
            return queue
        if not server_named and is_reserved_name(name):
            raise reserved_name_error("queue", name)
        # rabbit_channel: "Durable = DurableDeclare andalso not ExclusiveDeclare": an exclusive queue is never
        # durable, so an exclusive redeclare with durable=true matches it, and a quorum or stream queue
        # declared exclusive is refused for exclusive-owner before non-durable.
        durable = durable and not exclusive
        args = dict(arguments or {})
        default_type = self.default_queue_type
        if default_type is not None and durable and not auto_delete and "x-queue-type" not in args:
            # rabbit_amqqueue:augment_declare_args (3.10.8 and 4.0.5 alike, over AMQP and the HTTP API): the
            # vhost's default type goes to a durable, non-exclusive, non-auto-delete queue that names none.
            args["x-queue-type"] = default_type
        if self.profile.queue_type_in_arguments and "x-queue-type" not in args:
            # 4.0's rabbit_queue_type:inject_dqt, before the equivalence check.
            args["x-queue-type"] = "classic"
        existing = self.queues.get(name)
        if existing is not None:
            # assert_equivalence checks exclusive ownership strictly: same owner, same exclusivity.
            if existing.exclusive_owner is not (owner if exclusive else None):
                raise self._locked(existing)
            check_queue_equivalent(existing, durable, auto_delete, args)
            if existing.features is not None:
                existing.features.touch()  # a redeclare counts as use for x-expires
            return existing
        queue = new_queue(self, name, owner, durable, exclusive, auto_delete, args, server_named)
        self.churn.queue_created += 1
        return queue

    def new_queue_name(self) -> str:
        return self.names.queue_name()

    def auto_delete_queue(self, queue: Queue) -> None:
        if self.queues.get(queue.name) is queue:
            with acting(INTERNAL):  # the broker acts: RabbitMQ's events name ?INTERNAL_USER
                self.remove_queue(queue)

    def delete_queue(self, name: str, owner: object, if_unused: bool = False, if_empty: bool = False) -> int:
        """queue.delete: the ready count dropped; a missing queue is fine (RabbitMQ is idempotent here)."""
        queue = self.queues.get(name)
        if queue is None:
            return 0
        queue = self.queue(name, owner)
        if if_unused and queue.consumers:
            raise ChannelError(ReplyCode.PRECONDITION_FAILED, f"queue '{name}' in vhost '{self.name}' in use")
        if if_empty and (queue.ready or queue.fresh):  # a stream's log (not in these) is not checked
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
        self.churn.queue_deleted += 1
        self.deleted_queue_totals.disk_reads += queue.stats.disk_reads
        self.deleted_queue_totals.disk_writes += queue.stats.disk_writes
        removed = self.bindings.remove_destination(queue)
        self._unbound(removed)
        self._after_unbind(removed)
        if queue.store is not None:
            queue.store.queue_deleted(queue)
        if self.events.observers:
            dropped = list(queue.ready_envelopes())
            topology_events.dropped(self.events, self.name, queue, dropped, "queue_deleted")
            self.events.topology(Topology.QUEUE_DELETED, self.name, queue=queue.name)
        return delete_queue(queue)

    def purge_queue(self, name: str, owner: object) -> int:
        queue = self.queue(name, owner)
        if self.events.observers:
            topology_events.dropped(self.events, self.name, queue, list(queue.ready_envelopes()), "purged")
        return purge_queue(queue)

    # -- publishing

    def publish(self, exchange_name: str, message: Message) -> tuple[list[Queue], bool]:
        """Route and enqueue: (queues reached, empty = unroutable; whether an x-overflow reject-publish queue
        refused the message, so the publisher's confirm is a nack). A plain tuple: this runs per message."""
        exchange = self.exchanges.get(exchange_name)
        if exchange is None:
            raise no_exchange(exchange_name, self.name)
        if exchange.internal:
            raise internal_exchange(exchange_name, self.name)
        # Only queues are bound as non-exchange destinations, so the router's destinations are queues.
        queues = cast("list[Queue]", self.router.route(exchange, message))
        headers = message.headers
        if headers is not None and ("CC" in headers or "BCC" in headers):
            queues, message = sender_selected(self.router, exchange, message, queues, self.rewrite_header)
        rejected = False
        stats = exchange.stats
        stats.publish_in += 1
        stats.publish_out += len(queues)
        for queue in queues:
            queue.stats.publish += 1
            if not queue.enqueue(message):
                rejected = True
            if queue.consumers and len(queue.fresh) + len(queue.ready) > LAGGING_BACKLOG:
                self.lagging_copies += 1
        return queues, rejected

    # -- QueueHost (broker.core.queues.queue), DeadLetterHost and DelayHost

    def dead_letter(self, queue: Queue, envelopes: list[Envelope], reason: str) -> None:
        publish_dead_letters(self, queue, envelopes, reason)

    def publish_held(self, exchange_name: str, message: Message) -> list[Queue]:
        """A delayed message is due (x-delayed-message): route it now; gone if the exchange was deleted.
        Returns the queues it reached."""
        if exchange_name in self.exchanges:
            return self.publish(exchange_name, message)[0]
        return []

    def expire_queue(self, queue: Queue) -> None:
        if self.queues.get(queue.name) is queue:
            with acting(INTERNAL):
                self.remove_queue(queue)

    def with_delivery_count(self, message: Message, count: int) -> Message:
        """The message as quorum queues redeliver it: with the ``x-delivery-count`` header set."""
        if self.rewrite_header is None:
            return message
        return rewritten(message, self.rewrite_header, {"x-delivery-count": count})

    def with_stream_offset(self, message: Message, offset: int) -> Message:
        """The message as a stream delivers it over AMQP 0-9-1: with the ``x-stream-offset`` header."""
        if self.rewrite_header is None:
            return message
        return rewritten(message, self.rewrite_header, {"x-stream-offset": offset})

    def route_keys(self, exchange: Exchange, message: Message, keys: list[str]) -> list[Queue]:
        return route_keys(self.router, exchange, message, keys)

    def queue_limit(self) -> int | None:
        return self.parameters.vhost_limit(self.name, "max-queues") if self.parameters is not None else None

    def connection_limit(self) -> int | None:
        return (
            self.parameters.vhost_limit(self.name, "max-connections") if self.parameters is not None else None
        )

    def policies_changed(self) -> list[Queue]:
        """A policy or operator policy of this vhost was set, changed or cleared: apply it now; the queues
        whose policy changed."""
        if self.policies is None:
            return []
        return reapply(
            self.policies, self.name, self.queues.values(), self.exchanges.values(), self, self.profile
        )

    def plain_features(self, queue: Queue) -> QueueFeatures:
        return QueueFeatures(queue, PLAIN, self)
