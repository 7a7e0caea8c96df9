"""Exchange class: declare, delete, bind, unbind (exchange-to-exchange)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from broker.core.exchanges.exchange import (
    ALTERNATE_EXCHANGE,
    check_alternate_exchange_argument,
    check_exchange_type,
    is_reserved_name,
    system_exchange_deletion_error,
)
from broker.core.topology.vhost_topology import default_exchange_refused
from broker.session.access_checks import check, check_topic

if TYPE_CHECKING:
    from broker.core.topology.vhost import VirtualHost
    from broker.session.ports import ChannelPort


def _vhost(channel: ChannelPort) -> VirtualHost:
    vhost = channel.conn.vhost
    assert vhost is not None
    return vhost


def declare(channel: ChannelPort, method: commands.Exchange.Declare) -> None:
    vhost = _vhost(channel)
    if not method.passive:  # a passive declare checks no permission (rabbit_channel)
        _check_declare(channel, vhost, method)
    vhost.declare_exchange(
        method.exchange,
        method.exchange_type,
        passive=method.passive,
        durable=method.durable,
        auto_delete=method.auto_delete,
        internal=method.internal,
        arguments=method.arguments,
    )
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.DeclareOk())


def _check_declare(channel: ChannelPort, vhost: VirtualHost, method: commands.Exchange.Declare) -> None:
    """rabbit_channel exchange.declare: type, default exchange, configure on the exchange; for a new one the
    reserved prefix, the AE argument's type, then read on the exchange and write on its alternate exchange."""
    name = method.exchange
    check_exchange_type(method.exchange_type)
    if name == "":
        raise default_exchange_refused()
    check(channel, "exchange", name, "configure")
    if name in vhost.exchanges or is_reserved_name(name):
        return
    check_alternate_exchange_argument(name, method.arguments, vhost.name)
    alternate = (method.arguments or {}).get(ALTERNATE_EXCHANGE)
    if alternate is not None:
        check(channel, "exchange", name, "read")
        check(channel, "exchange", _text(alternate), "write")


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _check_binding(channel: ChannelPort, method: commands.Exchange.Bind | commands.Exchange.Unbind) -> None:
    """rabbit_channel binding_action: write on the destination, the default exchange refused, read on the
    source, then the routing key against the user's topic permission on a topic source."""
    check(channel, "exchange", method.destination, "write")
    if method.destination == "" or method.source == "":
        raise default_exchange_refused()
    check(channel, "exchange", method.source, "read")
    check_topic(channel, _vhost(channel).exchanges.get(method.source), method.routing_key, "read")


def delete(channel: ChannelPort, method: commands.Exchange.Delete) -> None:
    # rabbit_channel: the default and system exchanges are refused before the configure check.
    if method.exchange == "":
        raise default_exchange_refused()
    if is_reserved_name(method.exchange):
        raise system_exchange_deletion_error(method.exchange, _vhost(channel).name)
    check(channel, "exchange", method.exchange, "configure")
    _vhost(channel).delete_exchange(method.exchange, if_unused=method.if_unused)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.DeleteOk())


def bind(channel: ChannelPort, method: commands.Exchange.Bind) -> None:
    _check_binding(channel, method)
    _vhost(channel).bind_exchange(method.destination, method.source, method.routing_key, method.arguments)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.BindOk())


def unbind(channel: ChannelPort, method: commands.Exchange.Unbind) -> None:
    _check_binding(channel, method)
    _vhost(channel).unbind_exchange(method.destination, method.source, method.routing_key, method.arguments)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.UnbindOk())
