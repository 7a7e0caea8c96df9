"""/api/warrenmq/message-history/{vhost} (WarrenMQ's own, for the UI's #/messages): GET the recent messages'
paths, found by message_id, correlation_id or routing_key; PUT {"enabled": true|false} starts or stops
recording the vhost (stopping forgets what was recorded). Switching is for administrators, as RabbitMQ's
tracing switch (PUT /api/vhosts/{name} with "tracing") is; reading needs access to the vhost."""

from __future__ import annotations

from aiohttp import web

from broker.management.api.auth import Gate
from broker.management.api.message_history import history_of
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, json_response

_MAX_LIMIT = 1000


async def get_history(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = context.vhost(request.match_info["vhost"]).name
    query = request.query
    try:
        limit = int(query.get("limit", "100"))
    except ValueError:
        raise bad_request("limit must be an integer") from None
    if not 1 <= limit <= _MAX_LIMIT:
        raise bad_request(f"limit must be between 1 and {_MAX_LIMIT}")
    history = history_of(context.broker)
    messages = history.search(
        vhost,
        message_id=query.get("message_id", ""),
        correlation_id=query.get("correlation_id", ""),
        routing_key=query.get("routing_key", ""),
        limit=limit,
    )
    return json_response(
        {"enabled": vhost in history.vhosts, "capacity": history.capacity, "messages": messages}
    )


async def put_history(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = context.vhost(request.match_info["vhost"]).name
    body = await body_json(request, ("enabled",))
    enabled = body["enabled"]
    if not isinstance(enabled, bool):
        raise bad_request("enabled must be true or false")
    history = history_of(context.broker)
    if enabled:
        history.enable(vhost)
    else:
        history.disable(vhost)
    return web.Response(status=204)


ROUTES = [
    Route("GET", "/api/warrenmq/message-history/{vhost}", get_history, Gate.VHOST),
    Route("PUT", "/api/warrenmq/message-history/{vhost}", put_history, Gate.ADMIN),
]
