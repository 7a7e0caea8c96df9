"""Direct reply-to (amq.rabbitmq.reply-to): RPC replies delivered straight to a channel's reply consumer.

RabbitMQ 3.10.8-verified behaviour: the consumer must be no-ack ("reply consumer cannot acknowledge"), one per
channel ("reply consumer already set"); a publish with reply_to=amq.rabbitmq.reply-to needs a reply consumer
on the same channel ("fast reply consumer does not exist") and its reply_to is rewritten to the channel's
``amq.rabbitmq.reply-to.<pid>.<key>`` name (broker.session.reply_names: RabbitMQ 3.13's encoding); publishing
to that name on the default exchange delivers to the consumer (exchange "", routing key = the name) and, with
mandatory, also comes back as basic.return NO_ROUTE (3.x; 4.2 counts it as routed). Any declare of a name
starting with amq.rabbitmq.reply-to is passive (rabbit_channel): the bare pseudo-queue and a live reply name
answer declare-ok with 0 messages and 1 consumer, a name whose consumer is gone 404.

Each reply consumer consumes from a private `Queue` (never in the vhost's table), so delivery, prefetch and
backpressure are the ordinary queue code.
"""

from __future__ import annotations

import itertools
import random
from typing import TYPE_CHECKING

from pamqp import commands

from broker.core.model.message import Message
from broker.core.queues.queue import Consumer, Queue
from broker.core.queues.queue_admin import add_consumer
from broker.session import reply_names
from protocol.codec import make_method
from protocol.errors import ChannelError, HardError, ReplyCode, no_queue
from protocol.header_rewrite import replace_reply_to

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort

REPLY_QUEUE = "amq.rabbitmq.reply-to"
REPLY_PREFIX = reply_names.PREFIX

# The "pid" a channel's reply names carry (its reply_pid, not a weak map: a compiled ChannelSession takes no
# weak references): one per channel for its life (a second reply consumer on the same
# channel gets a new key, not a new pid, as in RabbitMQ), and this process's Erlang-style creation number.
_PID_IDS = itertools.count(1)
_CREATION = random.SystemRandom().getrandbits(32)


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
    pid_id = channel.reply_pid
    if not pid_id:
        pid_id = channel.reply_pid = next(_PID_IDS)
    key = reply_names.encode(conn.config.node_name, pid_id, _CREATION, conn.broker.names.guid())
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
    """Route a publish to ``amq.rabbitmq.reply-to.<pid>.<key>``; False when no consumer has that name (it is
    dropped, as RabbitMQ drops a reply to a channel that is gone). A name RabbitMQ cannot decode crashes its
    channel: 541, the connection closes (`_undecodable`)."""
    queue = channel.conn.broker.direct_reply.get(message.routing_key)
    if queue is None:
        if _undecodable(channel, message.routing_key):
            raise HardError(ReplyCode.INTERNAL_ERROR, "")
        return False
    queue.enqueue(message)
    return True


def declare(channel: ChannelPort, method: commands.Queue.Declare) -> None:
    """queue.declare of a name starting with amq.rabbitmq.reply-to, passive or not (rabbit_channel's
    declare_fast_reply_to, before any permission check): declare-ok with 0 messages and 1 consumer when the
    name is the pseudo-queue or a live reply name, else 404. A name carrying the declaring channel's own pid
    makes RabbitMQ's channel call itself and crash: 541."""
    conn = channel.conn
    name = method.queue.replace("\r", "").replace("\n", "")  # strip_cr_lf
    if name != REPLY_QUEUE:
        vhost = conn.vhost
        assert vhost is not None
        pid = reply_names.decode_v2(name.removeprefix(REPLY_PREFIX), conn.config.node_name)
        if name.startswith(REPLY_PREFIX) and pid is not None:
            if channel.reply_pid and pid.id == channel.reply_pid:
                raise HardError(ReplyCode.INTERNAL_ERROR, "")
            if name not in conn.broker.direct_reply:
                raise no_queue(name, vhost.name)
        elif _undecodable(channel, name):
            raise HardError(ReplyCode.INTERNAL_ERROR, "")
        else:
            raise no_queue(name, vhost.name)
    if not method.nowait:
        conn.send(channel.channel_id, make_method(commands.Queue.DeclareOk, queue=name, consumer_count=1))


def _undecodable(channel: ChannelPort, name: str) -> bool:
    """A reply name that is neither a v2 name of this node nor harmless to RabbitMQ's v1 decoder, which then
    crashes (3.x and 4.0; 4.2 rewrote direct reply-to and refuses such a name as unknown)."""
    conn = channel.conn
    if not conn.broker.profile.reply_to_v1_decoding or not name.startswith(REPLY_PREFIX):
        return False
    suffix = name.removeprefix(REPLY_PREFIX)
    node_name = conn.config.node_name
    return reply_names.decode_v2(suffix, node_name) is None and reply_names.v1_crashes(suffix, node_name)
