"""/api/bindings: lists (all, per vhost, per exchange-queue and exchange-exchange pair), POST to create
(answering 201 with a Location of the new binding), GET/DELETE one by its properties key."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote_plus, unquote_plus

from aiohttp import web

from broker.config.cookie import ACTING_USER
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.paging import reply, reply_list
from broker.management.api.resources.exchanges import exchange_name
from broker.management.api.resources.queues import check
from broker.management.api.routing import Route, body_json, declared_vhost, refusals_answered
from broker.management.context import ManagementContext
from broker.management.errors import ApiError, access_refused, bad_request, no_content, not_found
from broker.management.views.binding_key import json_arguments, properties_key
from broker.management.views.serialize import BINDING_SORT, vhost_bindings

_PAIR = "/api/bindings/{vhost}/e/{source:[^/]*}/{dtype:[eq]}/{destination:[^/]*}"


def _kind(request: web.Request) -> str:
    return "queue" if request.match_info["dtype"] == "q" else "exchange"


def _destination(request: web.Request) -> str:
    if _kind(request) == "exchange":
        return exchange_name(request, "destination")
    return request.match_info["destination"]


def _pair_rows(request: web.Request, context: ManagementContext) -> list[dict[str, Any]]:
    """The bindings between the path's source and destination; 404 when either is missing."""
    vhost = context.vhost(request.match_info["vhost"])
    source, destination, kind = exchange_name(request, "source"), _destination(request), _kind(request)
    ends = vhost.queues if kind == "queue" else vhost.exchanges
    if source not in vhost.exchanges or destination not in ends:
        raise not_found()
    return [
        row
        for row in vhost_bindings(vhost)
        if row["source"] == source and row["destination"] == destination and row["destination_type"] == kind
    ]


async def list_bindings(request: web.Request, context: ManagementContext) -> web.Response:
    names = visible_vhosts(context, current_user(request))
    rows = [row for name in names for row in vhost_bindings(context.broker.vhosts[name])]
    return reply_list(request, rows, BINDING_SORT, paginate=False)


async def list_vhost_bindings(request: web.Request, context: ManagementContext) -> web.Response:
    return reply_list(
        request, vhost_bindings(context.vhost(request.match_info["vhost"])), BINDING_SORT, paginate=False
    )


async def list_pair(request: web.Request, context: ManagementContext) -> web.Response:
    return reply_list(request, _pair_rows(request, context), BINDING_SORT, paginate=False)


async def create_binding(request: web.Request, context: ManagementContext) -> web.Response:
    """POST, in rabbit_mgmt_wm_bindings:accept_content's order: the body, the vhost, then the checks of
    rabbit_channel:binding_action: write on the destination, no default exchange at either end, read on the
    source, the topic read permission of an existing topic source; only then does a missing source (first)
    or destination answer 404."""
    # accept_content matches {ok, Props} = decode(Body) and types the arguments before anything else: a body
    # that is not a JSON object, or arguments that are not an object of non-null values, crash the handler,
    # and cowboy answers 500 with no body (RabbitMQ 3.10.8 and 3.13 alike). Copied, so nothing is created.
    # A list is taken as the table itself: [] (pyrabbit2 sends it) is no arguments.
    try:
        body = await body_json(request)
        raw_arguments = body.get("arguments", {})
        if not isinstance(raw_arguments, dict | list):
            raise ValueError("arguments")
        arguments = json_arguments(raw_arguments or {})
    except (ApiError, ValueError):
        raise ApiError(500, "", None) from None
    routing_key = body.get("routing_key", "")
    if not isinstance(routing_key, str) or not isinstance(arguments, dict):
        # (RabbitMQ stores whatever JSON value came as the key, and a non-empty list as the arguments table,
        # making bindings no client can name; refused here.)
        raise bad_request("routing_key must be a string and arguments an object")
    vhost = declared_vhost(context, request.match_info["vhost"])
    source, destination, kind = exchange_name(request, "source"), _destination(request), _kind(request)
    check(request, context, kind, destination, "write")
    if source == "" or (kind == "exchange" and destination == ""):
        raise access_refused()  # check_not_default_exchange
    check(request, context, "exchange", source, "read")
    _check_topic(request, context, vhost.name, source, routing_key)
    if source not in vhost.exchanges:
        raise ApiError(404, "not_found", f"no exchange '{source}' in vhost '{vhost.name}'")
    if destination not in (vhost.queues if kind == "queue" else vhost.exchanges):
        raise ApiError(404, "not_found", f"no {kind} '{destination}' in vhost '{vhost.name}'")
    with refusals_answered():
        if kind == "queue":
            owner = vhost.queues[destination].exclusive_owner
            vhost.bind_queue(destination, source, routing_key, arguments, owner)
        else:
            vhost.bind_exchange(destination, source, routing_key, arguments)
    key = properties_key(routing_key, arguments)
    # RabbitMQ answers a Location relative to the POSTed URI: destination/properties_key, form-encoded.
    location = f"{quote_plus(destination, safe='')}/{quote_plus(key, safe='')}"
    return no_content(201, {"Location": location})


def _check_topic(
    request: web.Request, context: ManagementContext, vhost: str, source: str, routing_key: str
) -> None:
    """rabbit_channel binding_action: after the vhost permissions, a topic source exchange checks the
    routing key against the user's topic read permission (check_read_permitted_on_topic)."""
    user = current_user(request)
    exchange = context.broker.vhosts[vhost].exchanges.get(source)
    if user.name == ACTING_USER or exchange is None or exchange.type_name != "topic":
        return
    if not context.broker.access.authorize_topic(user.name, vhost, source, routing_key, "read"):
        raise access_refused()


def _one(request: web.Request, context: ManagementContext) -> dict[str, Any]:
    # RabbitMQ unquotes the key once more after the path's own decoding, so "a.%23" and "a.%2523" both name
    # the binding whose properties_key is "a.%23" (pyrabbit2 sends the former, rabbitmqadmin the latter).
    wanted = unquote_plus(request.match_info["props"])
    for row in _pair_rows(request, context):
        if unquote_plus(row["properties_key"]) == wanted:
            return row
    raise not_found()


async def get_binding(request: web.Request, context: ManagementContext) -> web.Response:
    return reply(request, _one(request, context))


async def delete_binding(request: web.Request, context: ManagementContext) -> web.Response:
    row = _one(request, context)
    vhost = context.vhost(request.match_info["vhost"])
    if row["source"] == "":
        raise access_refused()
    check(request, context, row["destination_type"], row["destination"], "write")
    check(request, context, "exchange", row["source"], "read")
    with refusals_answered():
        if row["destination_type"] == "queue":
            owner = vhost.queues[row["destination"]].exclusive_owner
            vhost.unbind_queue(row["destination"], row["source"], row["routing_key"], row["arguments"], owner)
        else:
            vhost.unbind_exchange(row["destination"], row["source"], row["routing_key"], row["arguments"])
    return no_content()


ROUTES = [
    Route("GET", "/api/bindings", list_bindings),
    Route("GET", "/api/bindings/{vhost}", list_vhost_bindings, Gate.VHOST),
    Route("GET", _PAIR, list_pair, Gate.VHOST),
    Route("POST", _PAIR, create_binding, Gate.VHOST),
    Route("GET", _PAIR + "/{props}", get_binding, Gate.VHOST),
    Route("DELETE", _PAIR + "/{props}", delete_binding, Gate.VHOST),
]
