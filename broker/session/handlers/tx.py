"""Tx class: select, commit, rollback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from broker.session.tx import Transaction
from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort


def _not_transactional() -> ChannelError:
    return ChannelError(ReplyCode.PRECONDITION_FAILED, "channel is not transactional")


def select(channel: ChannelPort, method: commands.Tx.Select) -> None:
    if channel.confirm:
        raise ChannelError(ReplyCode.PRECONDITION_FAILED, "cannot switch from confirm to tx mode")
    if channel.tx is None:
        channel.tx = Transaction()
    channel.conn.send(channel.channel_id, commands.Tx.SelectOk())


def commit(channel: ChannelPort, method: commands.Tx.Commit) -> None:
    if channel.tx is None:
        raise _not_transactional()
    # commit-ok waits for the store's commit of what the transaction wrote (broker.session.durable_replies).
    channel.tx.commit(channel.route, channel.finish_settle)
    channel.conn.send(channel.channel_id, commands.Tx.CommitOk())


def rollback(channel: ChannelPort, method: commands.Tx.Rollback) -> None:
    if channel.tx is None:
        raise _not_transactional()
    channel.tx.rollback(channel.unacked)
    channel.conn.send(channel.channel_id, commands.Tx.RollbackOk())
