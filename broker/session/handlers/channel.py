"""Channel class on an open channel: close and flow (the connection handles channel.open)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from protocol.codec import AccessRequest, AccessRequestOk
from protocol.errors import HardError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort


def open_again(channel: ChannelPort, method: commands.Channel.Open) -> None:
    raise HardError(ReplyCode.CHANNEL_ERROR, "second 'channel.open' seen")


def close(channel: ChannelPort, method: commands.Channel.Close) -> None:
    channel.release()
    channel.conn.channel_closed(channel.channel_id)
    channel.conn.send(channel.channel_id, commands.Channel.CloseOk())


def close_ok(channel: ChannelPort, method: commands.Channel.CloseOk) -> None:
    """A close-ok without our close: rabbit_channel takes it only while closing; on an open channel it falls
    through to 503 "unimplemented method", a connection error (RabbitMQ 3.10.8 and 3.13)."""
    raise HardError(ReplyCode.COMMAND_INVALID, "unimplemented method")


def flow(channel: ChannelPort, method: commands.Channel.Flow) -> None:
    if not method.active:
        # RabbitMQ does not implement client-side flow stop (reference §2 row 3).
        raise HardError(ReplyCode.NOT_IMPLEMENTED, "active=false")
    channel.conn.send(channel.channel_id, commands.Channel.FlowOk(active=True))


def flow_ok(channel: ChannelPort, method: commands.Channel.FlowOk) -> None:
    """The broker never sends channel.flow, so a flow-ok needs no action."""


def access_request(channel: ChannelPort, method: AccessRequest) -> None:
    # access.request survives in RabbitMQ as a no-op returning ticket 1 (spec-differences).
    channel.conn.send(channel.channel_id, AccessRequestOk(ticket=1))
