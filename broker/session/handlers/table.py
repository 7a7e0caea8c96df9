"""Method class → handler for every channel method off the fast path; missing = unimplemented."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pamqp import commands

from broker.session.handlers import basic, channel, confirm, exchange, queue, tx
from protocol.codec import AccessRequest

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort

Handler = Callable[["ChannelPort", Any], None]

HANDLERS: dict[type, Handler] = {
    commands.Channel.Open: channel.open_again,
    commands.Channel.Close: channel.close,
    commands.Channel.CloseOk: channel.close_ok,
    commands.Channel.Flow: channel.flow,
    commands.Channel.FlowOk: channel.flow_ok,
    AccessRequest: channel.access_request,
    commands.Exchange.Declare: exchange.declare,
    commands.Exchange.Delete: exchange.delete,
    commands.Exchange.Bind: exchange.bind,
    commands.Exchange.Unbind: exchange.unbind,
    commands.Queue.Declare: queue.declare,
    commands.Queue.Bind: queue.bind,
    commands.Queue.Unbind: queue.unbind,
    commands.Queue.Purge: queue.purge,
    commands.Queue.Delete: queue.delete,
    commands.Basic.Qos: basic.qos,
    commands.Basic.Consume: basic.consume,
    commands.Basic.Cancel: basic.cancel,
    commands.Basic.Get: basic.get,
    commands.Basic.Recover: basic.recover,
    commands.Basic.RecoverAsync: basic.recover,
    commands.Confirm.Select: confirm.select,
    commands.Tx.Select: tx.select,
    commands.Tx.Commit: tx.commit,
    commands.Tx.Rollback: tx.rollback,
}
