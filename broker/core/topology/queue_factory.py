"""Creating a queue on declare: its compiled feature settings, the profile's refusals, and its wiring."""

from __future__ import annotations

from typing import Any, Protocol

from broker.core.events.events import EventBus
from broker.core.model.dispatcher import Dispatcher
from broker.core.model.event_types import Topology
from broker.core.model.message import Message
from broker.core.model.profile import TRANSIENT_NONEXCLUSIVE_DENIED
from broker.core.policies.policies import PolicyTable
from broker.core.policies.policy_apply import apply_to_queue
from broker.core.queues.queue import Queue, QueueHost
from broker.core.queues.queue_features import QueueFeatures
from broker.core.queues.queue_settings import CLASSIC, PLAIN, STREAM, compile_settings
from broker.core.topology.persistence import Persistence, is_durable_queue
from protocol.errors import ChannelError, HardError, ReplyCode


class QueueRegistry(QueueHost, Protocol):
    """The vhost a new queue joins and is hosted by (`broker.core.topology.vhost.VirtualHost`)."""

    @property
    def name(self) -> str: ...

    @property
    def dispatcher(self) -> Dispatcher: ...

    @property
    def events(self) -> EventBus: ...

    @property
    def persistence(self) -> Persistence | None: ...

    @property
    def queues(self) -> dict[str, Queue]: ...

    @property
    def policies(self) -> PolicyTable | None: ...

    def queue_limit(self) -> int | None:
        """The vhost's max-queues limit in force, or None."""
        ...

    def with_stream_offset(self, message: Message, offset: int) -> Message:
        """A copy of ``message`` carrying the ``x-stream-offset`` header of a stream delivery."""
        ...

    def auto_delete_queue(self, queue: Queue) -> None:
        """The queue's ``on_unused``: an auto-delete queue's last consumer left."""
        ...


def new_queue(
    vhost: QueueRegistry,
    name: str,
    owner: object,
    durable: bool,
    exclusive: bool,
    auto_delete: bool,
    args: dict[str, Any],
    server_named: bool,
) -> Queue:
    """A new queue registered in ``vhost`` (arguments validated by compile_settings, RabbitMQ's texts)."""
    settings = compile_settings(
        name, vhost.name, args, durable, exclusive, auto_delete, server_named, vhost.profile
    )
    if (
        not durable
        and not exclusive
        and not vhost.profile.transient_nonexclusive_queues
        and settings.queue_type == CLASSIC
    ):
        raise HardError(ReplyCode.INTERNAL_ERROR, TRANSIENT_NONEXCLUSIVE_DENIED, 50, 10)
    limit = vhost.queue_limit()
    if limit is not None and len(vhost.queues) >= limit:
        # rabbit_amqqueue:declare (rabbit_vhost_limit:is_over_queue_limit), text checked on RabbitMQ 3.10.8.
        raise ChannelError(
            ReplyCode.PRECONDITION_FAILED,
            f"cannot declare queue '{name}': queue limit in vhost '{vhost.name}' ({limit}) is reached",
        )
    queue = Queue(
        name,
        vhost.name,
        vhost.dispatcher,
        durable=durable,
        exclusive_owner=owner if exclusive else None,
        auto_delete=auto_delete,
        arguments=args,
        on_unused=vhost.auto_delete_queue,
    )
    queue.events = vhost.events
    queue.host = vhost
    if settings.queue_type == STREAM:
        from broker.core.streams.stream_queue import StreamPath  # with the first stream only

        queue.features = StreamPath(queue, settings, vhost, vhost.with_stream_offset)
    elif settings is not PLAIN:
        queue.features = QueueFeatures(queue, settings, vhost)
    if vhost.policies is not None:
        apply_to_queue(vhost.policies, queue, vhost, vhost.profile, base=settings)
    vhost.queues[name] = queue
    if vhost.persistence is not None and is_durable_queue(queue):
        queue.store = vhost.persistence
        vhost.persistence.queue_declared(queue)
    if vhost.events.observers:
        vhost.events.topology(
            Topology.QUEUE_DECLARED,
            vhost.name,
            queue=name,
            durable=durable,
            exclusive=exclusive,
            auto_delete=auto_delete,
            arguments=args,
        )
    return queue
