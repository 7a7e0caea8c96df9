"""/api/exchanges: lists, GET/PUT/DELETE one (if-unused), its bindings as source and as destination, and
POST publish. "amq.default" in a path is the default exchange, which cannot be declared or deleted."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.core.access.refusals import refusal, topic_refusal
from broker.core.exchanges.exchange import Exchange
from broker.core.model.expiration import parse_expiration
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.messages import build_message
from broker.management.api.paging import reply, reply_list
from broker.management.api.resources.queues import check, check_new_with_target, declare_arguments
from broker.management.api.routing import (
    Route,
    body_json,
    declared_vhost,
    flag,
    query_flag,
    refusals_answered,
)
from broker.management.context import ManagementContext
from broker.management.errors import (
    ApiError,
    access_refused,
    bad_request,
    json_response,
    no_content,
    not_found,
)
from broker.management.views.serialize import BINDING_SORT, vhost_bindings
from broker.management.views.serialize_stats import exchange_row
from broker.session.fates import published_events
from protocol.errors import AMQPError, ChannelError, ReplyCode

DEFAULT_EXCHANGE_ALIAS = "amq.default"


def exchange_name(request: web.Request, key: str = "name") -> str:
    """rabbit_mgmt_util:id: "amq.default" in a path names the default exchange ""."""
    name = request.match_info[key]
    return "" if name == DEFAULT_EXCHANGE_ALIAS else name


def _exchange(request: web.Request, context: ManagementContext) -> Exchange:
    exchange = context.vhost(request.match_info["vhost"]).exchanges.get(exchange_name(request))
    if exchange is None:
        raise not_found()
    return exchange


async def list_exchanges(request: web.Request, context: ManagementContext) -> web.Response:
    names = visible_vhosts(context, current_user(request))
    rows = [
        exchange_row(context, exchange, name)
        for name in names
        for exchange in context.broker.vhosts[name].exchanges.values()
    ]
    return reply_list(request, rows)


async def list_vhost_exchanges(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = context.vhost(request.match_info["vhost"])
    return reply_list(
        request, [exchange_row(context, exchange, vhost.name) for exchange in vhost.exchanges.values()]
    )


async def get_exchange(request: web.Request, context: ManagementContext) -> web.Response:
    exchange = _exchange(request, context)
    row: dict[str, Any] = exchange_row(context, exchange, request.match_info["vhost"], request)
    row["incoming"] = []
    row["outgoing"] = []
    return reply(request, row)


async def put_exchange(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = declared_vhost(context, request.match_info["vhost"])
    name = exchange_name(request)
    body = await body_json(request)
    arguments = declare_arguments(body)
    type_name = body.get("type", "direct")
    if not isinstance(type_name, str):
        raise bad_request("type must be a string")
    if name == "":
        raise access_refused()
    check(request, context, "exchange", name, "configure")
    existed = name in vhost.exchanges
    alternate = arguments.get("alternate-exchange")
    check_new_with_target(request, context, "exchange", name, existed, alternate)
    with refusals_answered():
        vhost.declare_exchange(
            name,
            type_name,
            durable=flag(body.get("durable")),
            auto_delete=flag(body.get("auto_delete")),
            internal=flag(body.get("internal")),
            arguments=arguments,
        )
    return no_content(204 if existed else 201)


async def delete_exchange(request: web.Request, context: ManagementContext) -> web.Response:
    name = exchange_name(request)
    if name == "":
        raise access_refused()
    exchange = _exchange(request, context)
    check(request, context, "exchange", exchange.name, "configure")
    with refusals_answered():
        context.vhost(request.match_info["vhost"]).delete_exchange(
            exchange.name, if_unused=query_flag(request, "if-unused")
        )
    return no_content()


async def bindings_source(request: web.Request, context: ManagementContext) -> web.Response:
    exchange = _exchange(request, context)
    rows = [
        row
        for row in vhost_bindings(context.vhost(request.match_info["vhost"]))
        if row["source"] == exchange.name
    ]
    return reply_list(request, rows, BINDING_SORT, paginate=False)


async def bindings_destination(request: web.Request, context: ManagementContext) -> web.Response:
    exchange = _exchange(request, context)
    rows = [
        row
        for row in vhost_bindings(context.vhost(request.match_info["vhost"]))
        if row["destination_type"] == "exchange" and row["destination"] == exchange.name
    ]
    return reply_list(request, rows, BINDING_SORT, paginate=False)


def _check_publish(context: ManagementContext, user: str, vhost: str, name: str, routing_key: str) -> None:
    """RabbitMQ publishes through an AMQP channel as the user: basic.publish's checks (write on the exchange,
    then the routing key on a topic exchange), refused with the channel's 403 (answered as 400 below)."""
    access = context.broker.access
    first = access.permission_first_in_refusals
    if not access.authorize(user, vhost, "exchange", name, "write"):
        raise ChannelError(ReplyCode.ACCESS_REFUSED, refusal(user, vhost, "exchange", name, "write", first))
    exchange = context.vhost(vhost).exchanges.get(name)
    if exchange is None or exchange.internal or exchange.type_name != "topic":
        return
    if not access.authorize_topic(user, vhost, name, routing_key, "write"):
        text = topic_refusal(user, vhost, name, routing_key, "write", first)
        raise ChannelError(ReplyCode.ACCESS_REFUSED, text)


async def publish(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = context.vhost(request.match_info["vhost"])
    name = exchange_name(request)
    body = await body_json(request, ("routing_key", "properties", "payload", "payload_encoding"))
    message = build_message(name, body)
    try:
        _check_publish(context, current_user(request).name, vhost.name, name, message.routing_key)
        if message.expiration is not None:
            parse_expiration(message.expiration)  # basic.publish's check: 406 "invalid expiration ..."
        queues, _ = vhost.publish(name, message)
        if vhost.events.hot_observers:  # RabbitMQ publishes through a channel: observers see it as one
            published_events(vhost.events, vhost.name, message, queues, False, 0, "HTTP API")
    except AMQPError as error:
        if error.code == ReplyCode.NOT_FOUND and context.broker.profile.management_4x:
            raise ApiError(404, "not_found", "exchange_not_found") from None  # 4.0.5's resource_exists
        # rabbit_mgmt_wm_exchange_publish reports the channel error as "<code> <reply text>".
        raise ApiError(400, "bad_request", f"{int(error.code)} {error.reply_text}") from None
    return json_response({"routed": bool(queues)})


ROUTES = [
    Route("GET", "/api/exchanges", list_exchanges),
    Route("GET", "/api/exchanges/{vhost}", list_vhost_exchanges, Gate.VHOST),
    Route("GET", "/api/exchanges/{vhost}/{name}", get_exchange, Gate.VHOST),
    Route("PUT", "/api/exchanges/{vhost}/{name}", put_exchange, Gate.VHOST),
    Route("DELETE", "/api/exchanges/{vhost}/{name}", delete_exchange, Gate.VHOST),
    Route("GET", "/api/exchanges/{vhost}/{name}/bindings/source", bindings_source, Gate.VHOST),
    Route("GET", "/api/exchanges/{vhost}/{name}/bindings/destination", bindings_destination, Gate.VHOST),
    Route("POST", "/api/exchanges/{vhost}/{name}/publish", publish, Gate.VHOST),
]
