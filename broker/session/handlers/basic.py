"""Basic class, slow path: qos, consume, cancel, get, recover. Publish and acks take the fast path in the
channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pamqp import commands

from broker.core.model.arguments import amqp_type_name
from broker.core.queues.queue import Consumer
from broker.core.queues.queue_admin import add_consumer, basic_get, remove_consumer
from broker.core.queues.queue_features import TimedEnvelope
from broker.core.queues.queue_settings import QUORUM, STREAM
from broker.core.queues.unacked import Delivery, requeue_deliveries
from broker.core.streams.lookup import stream_of
from broker.session import direct_reply
from broker.session.access_checks import check
from broker.session.fates import delivered_event, settled_events, stored_delivery
from broker.session.held_deliveries import catch_up_holding
from broker.session.queue_names import resolve_queue_name
from protocol.errors import ChannelError, HardError, ReplyCode
from protocol.fastpath import encode_basic_get_ok

if TYPE_CHECKING:
    from broker.core.queues.queue import Envelope, Queue
    from broker.core.topology.vhost import VirtualHost
    from broker.session.ports import ChannelPort


def _vhost(channel: ChannelPort) -> VirtualHost:
    vhost = channel.conn.vhost
    assert vhost is not None
    return vhost


def qos(channel: ChannelPort, method: commands.Basic.Qos) -> None:
    if method.prefetch_size:
        raise HardError(ReplyCode.NOT_IMPLEMENTED, f"prefetch_size!=0 ({method.prefetch_size})")
    # RabbitMQ's reading of `global` (consumer-prefetch.md): false = each new consumer, true = the whole
    # channel.
    # RabbitMQ 4.3 denies global_qos and treats global=true as global=false (version profile).
    if method.global_ and channel.conn.broker.profile.global_qos:
        channel.global_prefetch = method.prefetch_count
    else:
        channel.prefetch_count = method.prefetch_count
    channel.conn.send(channel.channel_id, commands.Basic.QosOk())
    channel.wake_queues()


def consume(channel: ChannelPort, method: commands.Basic.Consume) -> None:
    conn = channel.conn
    limit = conn.config.consumer_max_per_channel
    if limit is not None and len(channel.consumers) >= limit and method.consumer_tag not in channel.consumers:
        # rabbit_channel checks the channel's consumer count first, a reused tag only under the limit.
        raise HardError(ReplyCode.NOT_ALLOWED, f"reached maximum ({limit}) of consumers per channel")
    if method.queue == direct_reply.REPLY_QUEUE:
        direct_reply.consume(channel, method)
        return
    tag = method.consumer_tag or conn.broker.names.consumer_tag()
    if tag in channel.consumers:
        raise HardError(ReplyCode.NOT_ALLOWED, f"attempt to reuse consumer tag '{tag}'")
    # rabbit_channel: the tag first, then read on the queue, then the queue's existence.
    name = resolve_queue_name(channel, method.queue)
    check(channel, "queue", name, "read")
    queue = _vhost(channel).queue(name, conn)
    _check_consumer_priority(queue, method.arguments)
    stream_path = stream_of(queue)
    stream = stream_path is not None
    if stream_path is not None:
        stream_path.check_consume(
            channel.prefetch_count,
            method.no_ack,
            method.arguments or {},
            conn.broker.profile.stream_consume_names_stream_queue,
        )
    consumer = Consumer(
        tag,
        queue,
        channel,
        no_ack=method.no_ack,
        # RabbitMQ 3.10.8 lets other consumers onto a stream beside an "exclusive" one (compat scenario).
        exclusive=method.exclusive and not stream,
        prefetch_count=channel.prefetch_count,
        arguments=method.arguments,
    )
    # What the queue could already hand out (after an ack or recover in the same read) goes to the consumers
    # it has, before this one joins: rabbit_amqqueue_process handles its mailbox in order, and sends the
    # consume-ok itself (checked against RabbitMQ 3.10.8, tests/compat/test_frame_order.py).
    queue.dispatcher.catch_up(queue)
    # add_consumer only schedules dispatch, so consume-ok still precedes the first basic.deliver.
    add_consumer(queue, consumer)
    channel.consumers[tag] = consumer
    if not method.nowait:
        conn.send(channel.channel_id, commands.Basic.ConsumeOk(consumer_tag=tag))


def _check_consumer_priority(queue: Queue, arguments: Mapping[str, object] | None) -> None:
    """rabbit_amqqueue:check_consume_arguments: a classic or quorum queue's consumer x-priority must be an
    integer type, e.g. 406 "invalid arg 'x-priority' for queue 'q' in vhost '/': \"expected integer, got
    longstr\"" (RabbitMQ 3.10.8). Streams do not take the argument (not checked here)."""
    if not arguments or "x-priority" not in arguments:
        return
    value = arguments["x-priority"]
    features = queue.features
    if features is not None and features.settings.queue_type == STREAM:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChannelError(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid arg 'x-priority' for queue '{queue.name}' in vhost '{queue.vhost}': "
            f'"expected integer, got {amqp_type_name(value)}"',
        )


def cancel(channel: ChannelPort, method: commands.Basic.Cancel) -> None:
    tag = method.consumer_tag or ""
    known = channel.consumers.get(tag)
    if known is not None:
        # Deliveries an ack, nack or recover earlier in the read made possible go to this consumer before
        # its cancel-ok, which rabbit_amqqueue_process sends after them (basic.recover then basic.cancel:
        # the consumer gets its messages back, redelivered, as on RabbitMQ 3.10.8).
        known.queue.dispatcher.catch_up(known.queue)
    consumer = channel.consumers.pop(tag, None)
    # An unknown tag is not an error: the spec and rabbit_channel answer cancel-ok anyway.
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Basic.CancelOk(consumer_tag=tag))
    if consumer is not None:
        remove_consumer(consumer.queue, consumer)
        if consumer.queue.name == direct_reply.REPLY_QUEUE:
            direct_reply.forget(channel)


def get(channel: ChannelPort, method: commands.Basic.Get) -> None:
    name = resolve_queue_name(channel, method.queue)
    check(channel, "queue", name, "read")
    queue = _vhost(channel).queue(name, channel.conn)
    # The queue's consumers get what an earlier ack or recover of the read freed before basic.get takes one,
    # and this channel sends get-ok before those deliveries (broker.session.held_deliveries).
    held = catch_up_holding(channel, queue)
    try:
        features = queue.features
        if features is not None and features.settings.queue_type == QUORUM:
            get_from_quorum(channel, queue, method)
        else:
            send_get(channel, queue, basic_get(queue), method.no_ack)
    finally:
        held.release()


def get_from_quorum(channel: ChannelPort, queue: Queue, method: commands.Basic.Get) -> None:
    """Quorum queues refuse basic.get with single active consumer, and add x-delivery-count to what basic.get
    returns: always in 3.10 (rabbit_quorum_queue:basic_get), once returned in 4.0.5 (the profile says)."""
    assert queue.features is not None
    assert queue.host is not None
    if queue.features.settings.single_active_consumer:
        raise ChannelError(
            ReplyCode.RESOURCE_LOCKED,
            f"cannot obtain access to locked queue '{queue.name}' in vhost '{queue.vhost}'. "
            "basic.get operations are not supported by quorum queues with single active consumer",
        )
    envelope = basic_get(queue)
    counts_from_zero = queue.host.profile.quorum_get_counts_from_zero
    if counts_from_zero and isinstance(envelope, TimedEnvelope) and envelope.delivery_count == 0:
        envelope.message = queue.host.with_delivery_count(envelope.message, 0)
    send_get(channel, queue, envelope, method.no_ack)


def send_get(channel: ChannelPort, queue: Queue, envelope: Envelope | None, no_ack: bool) -> None:
    stats, queue_stats = channel.stats, queue.stats
    if envelope is None:
        stats.get_empty += 1
        queue_stats.get_empty += 1
        channel.conn.send(channel.channel_id, commands.Basic.GetEmpty())
        return
    tag = channel.unacked.allocate_tag()
    if no_ack:
        stats.get_no_ack += 1
        queue_stats.get_no_ack += 1
    else:
        stats.get += 1
        queue_stats.get += 1
        channel.unacked.track(Delivery(tag, queue, envelope, None))
    if envelope.redelivered:
        stats.redeliver += 1
        queue_stats.redeliver += 1
    if queue.store is not None and envelope.message.delivery_mode == 2:
        stored_delivery(queue, envelope, no_ack)
    events = queue.events
    if events is not None and events.stepping:
        if events.journal is not None and envelope.message.journal is not None:
            events.journal.delivered(queue, envelope, tag, no_ack)
        if events.hot_observers:
            delivered_event(queue, envelope, tag, None, no_ack)
        if events.tracer is not None:
            events.tracer.delivered(channel, queue, envelope)
    message = envelope.message
    channel.send_content(
        encode_basic_get_ok(
            channel.channel_id,
            tag,
            envelope.redelivered,
            message.exchange,
            message.routing_key,
            queue.message_count,
        ),
        message,
    )


def recover(channel: ChannelPort, method: commands.Basic.Recover | commands.Basic.RecoverAsync) -> None:
    if not method.requeue:
        raise HardError(ReplyCode.NOT_IMPLEMENTED, "requeue=false")
    deliveries = channel.unacked.take_all()
    vhost = channel.conn.vhost
    if vhost is not None and vhost.events.stepping:
        settled_events(vhost.events, deliveries, True, closed=True)
    requeue_deliveries(deliveries)
    if isinstance(method, commands.Basic.Recover):
        channel.conn.send(channel.channel_id, commands.Basic.RecoverOk())
