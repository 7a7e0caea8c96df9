"""Confirm class: confirm.select puts the channel in publisher-confirm mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort


def select(channel: ChannelPort, method: commands.Confirm.Select) -> None:
    if channel.tx is not None:
        raise ChannelError(ReplyCode.PRECONDITION_FAILED, "cannot switch from tx to confirm mode")
    channel.confirm = True
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Confirm.SelectOk())
