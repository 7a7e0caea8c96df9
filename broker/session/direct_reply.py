"""Direct reply-to (amq.rabbitmq.reply-to): RPC replies delivered straight to a channel's reply consumer.

RabbitMQ 3.10.8-verified behaviour: the consumer must be no-ack ("reply consumer cannot acknowledge"), one per
channel ("reply consumer already set"); a publish with reply_to=amq.rabbitmq.reply-to needs a reply consumer
on the same channel ("fast reply consumer does not exist") and its reply_to is rewritten to a per-channel
``amq.rabbitmq.reply-to.<token>`` key; publishing to that key on the default exchange delivers to the consumer
(exchange "", routing key = the key) and, with mandatory, also comes back as basic.return NO_ROUTE (3.x; 4.2
counts it as routed). A passive declare of the pseudo-queue answers 0 messages, 1 consumer.

Each reply consumer consumes from a private `Queue` (never in the vhost's table), so delivery, prefetch and
backpressure are the ordinary queue code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from broker.core.message import Message
from broker.core.queue import Consumer, Queue
from broker.core.queue_admin import add_consumer
from protocol.errors import ChannelError, ReplyCode
from protocol.header_rewrite import replace_reply_to

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort

REPLY_QUEUE = "amq.rabbitmq.reply-to"
REPLY_PREFIX = REPLY_QUEUE + "."


def _refused(text: str) -> ChannelError:
    return ChannelError(ReplyCode.PRECONDITION_FAILED, text)


def consume(channel: ChannelPort, method: commands.Basic.Consume) -> None:
    """basic.consume on amq.rabbitmq.reply-to."""
    conn = channel.conn
    if not method.no_ack:
        raise _refused("reply consumer cannot acknowledge")
    if channel.reply_key:
        raise _refused("reply consumer already set")
    vhost = conn.vhost
    assert vhost is not None
    tag = method.consumer_tag or conn.broker.names.consumer_tag()
    key = REPLY_PREFIX + conn.broker.names.queue_name().removeprefix("amq.gen-")
    queue = Queue(REPLY_QUEUE, vhost.name, vhost.dispatcher)
    queue.events = vhost.events
    consumer = Consumer(tag, queue, channel, no_ack=True, exclusive=False, prefetch_count=0)
    add_consumer(queue, consumer)
    channel.consumers[tag] = consumer
    channel.reply_key = key
    conn.broker.direct_reply[key] = queue
    if not method.nowait:
        conn.send(channel.channel_id, commands.Basic.ConsumeOk(consumer_tag=tag))


def forget(channel: ChannelPort) -> None:
    """The reply consumer was cancelled or its channel closed: its key no longer routes."""
    if channel.reply_key:
        channel.conn.broker.direct_reply.pop(channel.reply_key, None)
        channel.reply_key = ""


def stamp_reply_to(channel: ChannelPort, header_payload: bytes) -> bytes:
    """A publish asking for a direct reply: reply_to becomes this channel's key."""
    if not channel.reply_key:
        raise _refused("fast reply consumer does not exist")
    return replace_reply_to(header_payload, channel.reply_key)


def deliver_reply(channel: ChannelPort, message: Message) -> bool:
    """Route a publish to ``amq.rabbitmq.reply-to.<key>``; False when no consumer has that key."""
    queue = channel.conn.broker.direct_reply.get(message.routing_key)
    if queue is None:
        return False
    queue.enqueue(message)
    return True
