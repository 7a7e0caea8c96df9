"""Queue class: declare, bind, unbind, purge, delete."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from broker.session.direct_reply import REPLY_QUEUE
from protocol.codec import make_method

if TYPE_CHECKING:
    from broker.core.vhost import VirtualHost
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
    if method.passive and name == REPLY_QUEUE:
        # The direct reply-to pseudo-queue always "exists" (rabbit_channel: 0 messages, 1 consumer).
        conn.send(channel.channel_id, make_method(commands.Queue.DeclareOk, queue=name, consumer_count=1))
        return
    known = name in vhost.queues
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
    if not method.nowait:
        conn.send(
            channel.channel_id,
            # Not pamqp's constructor: its validate() refuses names RabbitMQ accepts (541 before, issue 17).
            make_method(
                commands.Queue.DeclareOk,
                queue=queue.name,
                message_count=queue.message_count,
                consumer_count=queue.consumer_count,
            ),
        )


def bind(channel: ChannelPort, method: commands.Queue.Bind) -> None:
    name = channel.resolve_queue_name(method.queue)
    # rabbit_channel expand_routing_key_shortcut: empty queue and empty key bind by the last queue's name.
    routing_key = name if not method.queue and not method.routing_key else method.routing_key
    _vhost(channel).bind_queue(name, method.exchange, routing_key, method.arguments, channel.conn)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Queue.BindOk())


def unbind(channel: ChannelPort, method: commands.Queue.Unbind) -> None:
    name = channel.resolve_queue_name(method.queue)
    _vhost(channel).unbind_queue(name, method.exchange, method.routing_key, method.arguments, channel.conn)
    channel.conn.send(channel.channel_id, commands.Queue.UnbindOk())


def purge(channel: ChannelPort, method: commands.Queue.Purge) -> None:
    count = _vhost(channel).purge_queue(channel.resolve_queue_name(method.queue), channel.conn)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Queue.PurgeOk(message_count=count))


def delete(channel: ChannelPort, method: commands.Queue.Delete) -> None:
    name = channel.resolve_queue_name(method.queue)
    count = _vhost(channel).delete_queue(
        name, channel.conn, if_unused=method.if_unused, if_empty=method.if_empty
    )
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Queue.DeleteOk(message_count=count))
