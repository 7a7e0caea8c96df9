"""Queue class: declare, bind, unbind, purge, delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pamqp import commands

from broker.core.exchanges.exchange import is_reserved_name, reserved_name_error
from broker.core.streams.lookup import stream_of
from broker.core.topology.vhost_topology import default_exchange_refused
from broker.session import direct_reply
from broker.session.access_checks import check, check_topic
from broker.session.direct_reply import REPLY_QUEUE
from broker.session.held_deliveries import HeldDeliveries, catch_up_holding
from broker.session.queue_names import resolve_queue_name
from protocol.codec import make_method

if TYPE_CHECKING:
    from broker.core.topology.vhost import VirtualHost
    from broker.session.ports import ChannelPort


def _vhost(channel: ChannelPort) -> VirtualHost:
    vhost = channel.conn.vhost
    assert vhost is not None
    return vhost


def declare(channel: ChannelPort, method: commands.Queue.Declare) -> None:
    vhost = _vhost(channel)
    conn = channel.conn
    # A passive declare takes the name as given: RabbitMQ does not expand "" to the last declared queue here.
    name = method.queue if method.passive else method.queue or vhost.new_queue_name()
    if name.startswith(REPLY_QUEUE):
        # rabbit_channel: every declare of a direct reply-to name is passive (0 messages, 1 consumer).
        direct_reply.declare(channel, method)
        return
    known = name in vhost.queues
    if not method.passive:  # a passive declare checks no permission (rabbit_channel)
        _check_declare(channel, name, known, not method.queue, method.arguments)
    queue = vhost.declare_queue(
        name,
        conn,
        passive=method.passive,
        durable=method.durable,
        exclusive=method.exclusive,
        auto_delete=method.auto_delete,
        arguments=method.arguments,
        server_named=not method.passive and not method.queue,
    )
    if not known and queue.exclusive_owner is conn:
        conn.exclusive_queues.append(queue)
    channel.last_queue = queue.name
    # No catch-up of pending dispatch here (unlike purge): rabbit_amqqueue_process answers stat with priority,
    # ahead of an ack already in its mailbox, so declare-ok counts the messages as they were and goes out
    # before what the ack frees (RabbitMQ 3.10.8: ack then declare -> declare-ok 2, then the delivery).
    if not method.nowait:
        conn.send(
            channel.channel_id,
            # Not pamqp's constructor: its validate() refuses names RabbitMQ accepts, and the reply would
            # become a 541 where RabbitMQ answers declare-ok.
            make_method(
                commands.Queue.DeclareOk,
                queue=queue.name,
                message_count=queue.message_count,
                # rabbit_stream_queue:stat answers 0 consumers for a stream, whoever reads it (3.10 to 4.x).
                consumer_count=0 if stream_of(queue) is not None else queue.consumer_count,
            ),
        )


def _check_declare(
    channel: ChannelPort, name: str, known: bool, server_named: bool, arguments: Mapping[str, object] | None
) -> None:
    """rabbit_channel queue.declare: the reserved prefix of a client-chosen name, configure on the queue
    (a server-named one by its amq.gen- name); for a new queue with a dead-letter exchange, read on the
    queue and write on the DLX (dead-lettering itself is not checked later, as in RabbitMQ)."""
    if not server_named and is_reserved_name(name):
        raise reserved_name_error("queue", name)
    check(channel, "queue", name, "configure")
    dead_letter_exchange = (arguments or {}).get("x-dead-letter-exchange")
    if not known and isinstance(dead_letter_exchange, str | bytes):
        check(channel, "queue", name, "read")
        dlx = (
            dead_letter_exchange.decode() if isinstance(dead_letter_exchange, bytes) else dead_letter_exchange
        )
        check(channel, "exchange", dlx, "write")


def _check_binding(channel: ChannelPort, queue: str, exchange: str, routing_key: str) -> None:
    """rabbit_channel binding_action: write on the queue, the default exchange refused, read on the
    exchange, then the routing key against the user's topic permission on a topic exchange."""
    check(channel, "queue", queue, "write")
    if exchange == "":
        raise default_exchange_refused()
    check(channel, "exchange", exchange, "read")
    check_topic(channel, _vhost(channel).exchanges.get(exchange), routing_key, "read")


def bind(channel: ChannelPort, method: commands.Queue.Bind) -> None:
    name = resolve_queue_name(channel, method.queue)
    # rabbit_channel expand_routing_key_shortcut: empty queue and empty key bind by the last queue's name.
    routing_key = name if not method.queue and not method.routing_key else method.routing_key
    _check_binding(channel, name, method.exchange, routing_key)
    _vhost(channel).bind_queue(name, method.exchange, routing_key, method.arguments, channel.conn)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Queue.BindOk())


def unbind(channel: ChannelPort, method: commands.Queue.Unbind) -> None:
    name = resolve_queue_name(channel, method.queue)
    _check_binding(channel, name, method.exchange, method.routing_key)
    _vhost(channel).unbind_queue(name, method.exchange, method.routing_key, method.arguments, channel.conn)
    channel.conn.send(channel.channel_id, commands.Queue.UnbindOk())


def purge(channel: ChannelPort, method: commands.Queue.Purge) -> None:
    name = resolve_queue_name(channel, method.queue)
    check(channel, "queue", name, "read")
    vhost = _vhost(channel)
    # What an ack or recover earlier in the read freed goes to the consumers first, as the queue process
    # handles them before the purge; this channel sends purge-ok before those deliveries
    # (broker.session.held_deliveries).
    held = catch_up_holding(channel, vhost.queue(name, channel.conn))
    try:
        count = vhost.purge_queue(name, channel.conn)
        if not method.nowait:
            channel.conn.send(channel.channel_id, commands.Queue.PurgeOk(message_count=count))
    finally:
        held.release()


def delete(channel: ChannelPort, method: commands.Queue.Delete) -> None:
    name = resolve_queue_name(channel, method.queue)
    check(channel, "queue", name, "configure")
    vhost = _vhost(channel)
    held = HeldDeliveries(channel)
    try:
        if name in vhost.queues:
            # As purge: what an ack earlier in the read freed is delivered before the queue goes (and before
            # if-empty is judged); this channel sends delete-ok, then those deliveries, and cancels its own
            # consumers of the queue once the read is handled (broker.session.held_deliveries).
            with held.standing_in(vhost.queue(name, channel.conn)):
                count = vhost.delete_queue(
                    name, channel.conn, if_unused=method.if_unused, if_empty=method.if_empty
                )
        else:
            count = 0  # rabbit_channel answers delete-ok for a queue that is not there
        if not method.nowait:
            channel.conn.send(channel.channel_id, commands.Queue.DeleteOk(message_count=count))
    finally:
        held.release()
