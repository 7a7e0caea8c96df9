"""The empty queue name: AMQP 0-9-1's shorthand for the channel's most recently declared queue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort


def resolve_queue_name(channel: ChannelPort, name: str) -> str:
    """``name``, or the channel's last declared queue when it is empty (rabbit_channel; 404 when none)."""
    if name:
        return name
    if not channel.last_queue:
        raise ChannelError(ReplyCode.NOT_FOUND, "no previously declared queue")
    return channel.last_queue
