"""How a channel ends: a soft error's channel.close, and the release of what it holds (its consumers and its
unacked deliveries), as rabbit_channel does when a channel terminates. Off the message path: the channel
(`broker.session.channel_session`) calls here once per channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from broker.core.queues.queue_admin import remove_consumer
from broker.core.queues.unacked import requeue_deliveries
from broker.session import connection_log, direct_reply, lifecycle_events
from broker.session.fates import settled_events
from protocol.errors import HardError, ReplyCode

if TYPE_CHECKING:
    from pamqp.base import Frame

    from broker.session.ports import ChannelPort
    from protocol.errors import ChannelError


def method_while_closing(channel: ChannelPort, method: Frame) -> None:
    """After the broker sent channel.close only close and close-ok count (spec 2.2.4); the rest is
    dropped. A crossing channel.close is answered with close-ok, and the channel stays closing until the
    client's close-ok for ours: as RabbitMQ, a channel.open before it is 504 "second 'channel.open'
    seen" (checked against the oracle).
    """
    if isinstance(method, commands.Channel.Close):
        channel.conn.send(channel.channel_id, commands.Channel.CloseOk())
        channel.close_crossed = True
    elif isinstance(method, commands.Channel.CloseOk):
        channel.conn.channel_closed(channel.channel_id)
    elif isinstance(method, commands.Channel.Open) and channel.close_crossed:
        raise HardError(ReplyCode.CHANNEL_ERROR, "second 'channel.open' seen", 20, 10)


def close_with_error(channel: ChannelPort, error: ChannelError) -> None:
    """Soft error: earned confirms first, then channel.close; frames are dropped until close-ok."""
    connection_log.channel_error(channel, error)
    channel.flush_confirms()
    channel.release()
    channel.conn.send(
        channel.channel_id,
        commands.Channel.Close(
            reply_code=int(error.code),
            reply_text=error.reply_text,
            class_id=error.class_id,
            method_id=error.method_id,
        ),
    )


def release(channel: ChannelPort) -> None:
    """Cancel consumers, then requeue every unacked delivery (RabbitMQ does both when a channel ends).
    The caller has checked and set ``channel.closing``: this runs once per channel."""
    vhost = channel.conn.vhost
    if vhost is not None:  # the vhost's totals keep what this channel counted (RabbitMQ's do)
        channel.stats.publish_confirm = channel.publish_seq
        vhost.channel_totals.add(channel.stats)
        vhost.churn.channel_closed += 1
        lifecycle_events.channel_closed(channel.conn.broker, channel.pid, channel.conn.username)
    direct_reply.forget(channel)
    consumers = list(channel.consumers.values())
    channel.consumers.clear()
    for consumer in consumers:
        remove_consumer(consumer.queue, consumer)
    if channel.tx is not None:
        channel.tx.rollback_settlements(channel.unacked)
        channel.tx = None
    deliveries = channel.unacked.take_all()
    if vhost is not None and vhost.events.stepping:
        settled_events(vhost.events, deliveries, True, closed=True)
    requeue_deliveries(deliveries)
