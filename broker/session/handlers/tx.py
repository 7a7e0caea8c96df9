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
    persistence = channel.conn.vhost.persistence if channel.conn.vhost is not None else None
    writes = persistence.writes if persistence is not None else 0
    channel.tx.commit(channel.route, channel.finish_settle)
    if persistence is not None and persistence.writes != writes:
        # commit-ok means responsibility taken (semantics.md#tx): not before the store has committed.
        channel.conn.hold_output(persistence.batch_id)
    channel.conn.send(channel.channel_id, commands.Tx.CommitOk())


def rollback(channel: ChannelPort, method: commands.Tx.Rollback) -> None:
    if channel.tx is None:
        raise _not_transactional()
    channel.tx.rollback(channel.unacked)
    channel.conn.send(channel.channel_id, commands.Tx.RollbackOk())
