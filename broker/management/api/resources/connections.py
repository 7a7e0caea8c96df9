"""/api/connections (+ DELETE with X-Reason, + channels, + username/{user}), /api/channels, /api/consumers.

A user without the monitoring or administrator tag sees only its own connections and channels
(rabbit_mgmt_util:filter_conn_ch_list); deleting another user's connection needs administrator."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.core.access.access import User
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.paging import reply, reply_list
from broker.management.api.routing import Route
from broker.management.context import ManagementContext
from broker.management.errors import no_content, not_authorised, not_found
from broker.management.stats import live
from broker.management.views.serialize_live import amqp10_connection_json, amqp10_consumer_json, consumer_json
from broker.management.views.serialize_stats import channel_row, connection_row

DEFAULT_REASON = "Closed via management plugin"


def _visible(context: ManagementContext, user: User) -> list[Any]:
    return [
        protocol
        for protocol in context.open_connections()
        if user.is_monitor or live.connection_user(protocol) == user.name
    ]


def connection_rows(context: ManagementContext, user: User) -> list[dict[str, Any]]:
    rows = [connection_row(context, protocol) for protocol in _visible(context, user)]
    rows += [
        amqp10_connection_json(protocol, context.node)
        for protocol in context.open_amqp10_connections()
        if user.is_monitor or protocol.connection.username == user.name
    ]
    return rows


def channel_rows(context: ManagementContext, user: User) -> list[dict[str, Any]]:
    return [
        channel_row(context, protocol, number, channel)
        for protocol in _visible(context, user)
        for number, channel in live.channels(protocol)
    ]


def _find(context: ManagementContext, name: str) -> Any:
    """The AMQP 0-9-1 or 1.0 connection of that name (RabbitMQ 4 serves both under /api/connections)."""
    for protocol in context.open_connections():
        if protocol.name == name:
            return protocol
    for protocol in context.open_amqp10_connections():
        if protocol.name == name:
            return protocol
    raise not_found()


def _is_amqp10(protocol: Any) -> bool:
    return getattr(protocol, "session", None) is None


def _owner(protocol: Any) -> str:
    return str(protocol.connection.username) if _is_amqp10(protocol) else live.connection_user(protocol)


def _row(context: ManagementContext, protocol: Any, request: web.Request | None = None) -> dict[str, Any]:
    if _is_amqp10(protocol):
        return amqp10_connection_json(protocol, context.node)
    return connection_row(context, protocol, request)


def _force_close(protocol: Any, reason: str) -> None:
    if _is_amqp10(protocol):
        # RabbitMQ 4.0.5 closes it with amqp:internal-error 'Connection forced: "<reason>"'.
        protocol.connection.force_close(reason)
    else:
        live.force_close(protocol, reason)


def _check_owner(request: web.Request, protocol: Any) -> None:
    """rabbit_mgmt_util:is_authorized_user: own objects, or monitor to read and administrator to delete."""
    user = current_user(request)
    allowed = user.is_administrator if request.method == "DELETE" else user.is_monitor
    if not allowed and _owner(protocol) != user.name:
        raise not_authorised("User not authorised to access object")


async def list_connections(request: web.Request, context: ManagementContext) -> web.Response:
    return reply_list(request, connection_rows(context, current_user(request)))


async def get_connection(request: web.Request, context: ManagementContext) -> web.Response:
    protocol = _find(context, request.match_info["name"])
    _check_owner(request, protocol)
    return reply(request, _row(context, protocol, request))


async def delete_connection(request: web.Request, context: ManagementContext) -> web.Response:
    """Force-close with 320; the reason is the `X-Reason` header, else RabbitMQ's default text."""
    protocol = _find(context, request.match_info["name"])
    _check_owner(request, protocol)
    _force_close(protocol, request.headers.get("X-Reason") or DEFAULT_REASON)
    return no_content()


async def connection_channels(request: web.Request, context: ManagementContext) -> web.Response:
    protocol = _find(context, request.match_info["name"])
    _check_owner(request, protocol)
    if _is_amqp10(protocol):  # RabbitMQ 4.0.5 lists no channel for an AMQP 1.0 session
        return reply_list(request, [])
    rows = [channel_row(context, protocol, n, channel) for n, channel in live.channels(protocol)]
    return reply_list(request, rows)


def _user_connections(request: web.Request, context: ManagementContext) -> list[Any]:
    username = request.match_info["username"]
    user = current_user(request)
    allowed = user.is_administrator if request.method == "DELETE" else user.is_monitor
    if not allowed and username != user.name:
        raise not_authorised("User not authorised to access object")
    return [p for p in context.open_connections() if live.connection_user(p) == username] + [
        p for p in context.open_amqp10_connections() if p.connection.username == username
    ]


async def list_user_connections(request: web.Request, context: ManagementContext) -> web.Response:
    rows = [_row(context, p) for p in _user_connections(request, context)]
    return reply_list(request, rows)


async def delete_user_connections(request: web.Request, context: ManagementContext) -> web.Response:
    reason = request.headers.get("X-Reason") or DEFAULT_REASON
    for protocol in _user_connections(request, context):
        _force_close(protocol, reason)
    return no_content()


async def list_channels(request: web.Request, context: ManagementContext) -> web.Response:
    return reply_list(request, channel_rows(context, current_user(request)))


async def get_channel(request: web.Request, context: ManagementContext) -> web.Response:
    wanted = request.match_info["name"]
    for protocol in _visible(context, current_user(request)):
        for number, channel in live.channels(protocol):
            if live.channel_name(protocol, number) == wanted:
                row = channel_row(context, protocol, number, channel, request)
                # The detail view adds the channel's consumers, and its per-queue deliveries and per-exchange
                # publishes (fine-grained statistics WarrenMQ does not keep per channel: empty lists).
                row["consumer_details"] = [
                    consumer_json(protocol, number, consumer, context.node)
                    for consumer in live.channel_consumers(channel)
                ]
                row["deliveries"], row["publishes"] = [], []
                return reply(request, row)
    raise not_found()


def consumer_rows(context: ManagementContext, vhosts: list[str]) -> list[dict[str, Any]]:
    wanted = set(vhosts)
    rows = [
        consumer_json(protocol, number, consumer, context.node)
        for protocol in context.open_connections()
        if live.connection_vhost(protocol) in wanted
        for number, channel in live.channels(protocol)
        for consumer in live.channel_consumers(channel)
    ]
    timeout_ms = context.server.config.session.consumer_timeout_ms
    rows += [
        amqp10_consumer_json(link, timeout_ms)
        for protocol in context.open_amqp10_connections()
        if protocol.connection.vhost.name in wanted
        for link in live.amqp10_receivers(protocol)
    ]
    return rows


async def list_consumers(request: web.Request, context: ManagementContext) -> web.Response:
    rows = consumer_rows(context, visible_vhosts(context, current_user(request)))
    return reply_list(request, rows, ("queue.vhost", "queue.name"))


async def list_vhost_consumers(request: web.Request, context: ManagementContext) -> web.Response:
    name = context.vhost(request.match_info["vhost"]).name
    return reply_list(request, consumer_rows(context, [name]), ("queue.vhost", "queue.name"))


ROUTES = [
    Route("GET", "/api/connections", list_connections),
    Route("GET", "/api/connections/username/{username}", list_user_connections),
    Route("DELETE", "/api/connections/username/{username}", delete_user_connections),
    Route("GET", "/api/connections/{name}", get_connection),
    Route("DELETE", "/api/connections/{name}", delete_connection),
    Route("GET", "/api/connections/{name}/channels", connection_channels),
    Route("GET", "/api/channels", list_channels),
    Route("GET", "/api/channels/{name}", get_channel),
    Route("GET", "/api/consumers", list_consumers),
    Route("GET", "/api/consumers/{vhost}", list_vhost_consumers, Gate.VHOST),
]
