"""/api/vhosts: list, GET/PUT/DELETE one (description, tags, default_queue_type), and its permissions,
topic permissions, connections and channels."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.config.cookie import ACTING_USER
from broker.core.access.access import parse_tags
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.paging import reply, reply_list
from broker.management.api.resources.connections import channel_rows, connection_rows
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, no_content, not_found
from broker.management.views.serialize import permission_json, topic_permission_json
from broker.management.views.serialize_stats import vhost_row
from broker.session.tracing import Tracer

_QUEUE_TYPES = ("classic", "quorum", "stream")


def _row(context: ManagementContext, name: str, request: web.Request | None = None) -> dict[str, Any]:
    metadata = context.broker.vhost_metadata.get(name, {})
    return vhost_row(context, context.vhost(name), metadata, request)


async def list_vhosts(request: web.Request, context: ManagementContext) -> web.Response:
    names = visible_vhosts(context, current_user(request))
    return reply_list(request, [_row(context, name) for name in names])


async def get_vhost(request: web.Request, context: ManagementContext) -> web.Response:
    return reply(request, _row(context, request.match_info["vhost"], request))


def _metadata(body: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    metadata = {
        "description": body.get("description", ""),
        "tags": list(parse_tags(body.get("tags"))),
    }
    # 3.10.8's rabbit_mgmt_wm_vhost reads `defaultqueuetype` (what its UI's form sends) and ignores
    # `default_queue_type`; later releases read both.
    queue_type = body.get(
        "default_queue_type", body.get("defaultqueuetype", previous.get("default_queue_type"))
    )
    if queue_type is not None:
        if queue_type not in _QUEUE_TYPES:
            raise bad_request(f"Unsupported queue type '{queue_type}'")
        metadata["default_queue_type"] = queue_type
    if not isinstance(metadata["description"], str):
        raise bad_request("description must be a string")
    return metadata


def set_tracing(context: ManagementContext, vhost: str, on: bool) -> None:
    """rabbit_trace:start/stop: the broker's firehose tracer follows the vhosts that trace; with none it is
    detached, so the hot path is back to one test."""
    events = context.broker.events
    tracer = events.tracer if isinstance(events.tracer, Tracer) else Tracer(context.node)
    if on:
        tracer.vhosts.add(vhost)
    else:
        tracer.vhosts.discard(vhost)
    events.set_tracer(tracer if tracer.vhosts else None)


async def put_vhost(request: web.Request, context: ManagementContext) -> web.Response:
    name = request.match_info["vhost"]
    body = await body_json(request)
    broker = context.broker
    metadata = _metadata(body, broker.vhost_metadata.get(name, {}))
    existed = name in broker.vhosts
    broker.add_vhost(name, metadata)
    tracing = body.get("tracing")
    if tracing is not None:  # absent: unchanged (rabbit_mgmt_wm_vhost)
        set_tracing(context, name, tracing in (True, "true"))
    if existed:
        return no_content(204)
    creator = current_user(request).name
    if creator != ACTING_USER:
        # rabbit_mgmt_wm_vhost: the user who creates a vhost gets full permissions in it (not so for
        # rabbitmqctl add_vhost, whose acting user is no user).
        broker.access.set_permission(creator, name, ".*", ".*", ".*")
    return no_content(201)


async def delete_vhost(request: web.Request, context: ManagementContext) -> web.Response:
    if not context.broker.delete_vhost(request.match_info["vhost"]):
        raise not_found()
    set_tracing(context, request.match_info["vhost"], False)
    return no_content()


async def vhost_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    name = context.vhost(request.match_info["vhost"]).name
    rows = [permission_json(p) for p in context.broker.access.permissions.values() if p.vhost == name]
    return reply_list(request, rows, ("user",))


async def vhost_topic_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    name = context.vhost(request.match_info["vhost"]).name
    rows = [
        topic_permission_json(p) for p in context.broker.access.topic_permissions.values() if p.vhost == name
    ]
    return reply_list(request, rows, ("user",))


async def vhost_connections(request: web.Request, context: ManagementContext) -> web.Response:
    name = context.vhost(request.match_info["vhost"]).name
    rows = [row for row in connection_rows(context, current_user(request)) if row["vhost"] == name]
    return reply_list(request, rows)


async def vhost_channels(request: web.Request, context: ManagementContext) -> web.Response:
    name = context.vhost(request.match_info["vhost"]).name
    rows = [row for row in channel_rows(context, current_user(request)) if row["vhost"] == name]
    return reply_list(request, rows)


ROUTES = [
    Route("GET", "/api/vhosts", list_vhosts),
    Route("GET", "/api/vhosts/{vhost}", get_vhost, Gate.VHOST),
    Route("PUT", "/api/vhosts/{vhost}", put_vhost, Gate.ADMIN),
    Route("DELETE", "/api/vhosts/{vhost}", delete_vhost, Gate.ADMIN),
    Route("GET", "/api/vhosts/{vhost}/permissions", vhost_permissions, Gate.ADMIN),
    Route("GET", "/api/vhosts/{vhost}/topic-permissions", vhost_topic_permissions, Gate.ADMIN),
    Route("GET", "/api/vhosts/{vhost}/connections", vhost_connections, Gate.VHOST),
    Route("GET", "/api/vhosts/{vhost}/channels", vhost_channels, Gate.VHOST),
]
