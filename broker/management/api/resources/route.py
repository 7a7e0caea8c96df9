"""POST /api/exchanges/{vhost}/{name}/route (WarrenMQ's own, for the UI's "route a test key"): where a
message with this routing key and headers would go, computed by the broker's own router (exchange types,
exchange-to-exchange bindings, alternate exchanges) and enqueuing nothing. It reveals no more than
GET /api/bindings already shows a user of the vhost, so the vhost gate is the only check."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.core.exchanges.exchange import Exchange
from broker.management.api.auth import Gate
from broker.management.api.messages import build_message
from broker.management.api.resources.exchanges import exchange_name
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import json_response, not_found


def _name(destination: object) -> str:
    return str(getattr(destination, "name", ""))


async def route(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = context.vhost(request.match_info["vhost"])
    name = exchange_name(request)
    exchange = vhost.exchanges.get(name)
    if exchange is None:
        raise not_found()
    body = await body_json(request, ("routing_key",))
    body.setdefault("payload", "")
    body.setdefault("payload_encoding", "string")
    message = build_message(name, body)
    queues, hops = vhost.router.trace(exchange, message)
    rows: list[dict[str, Any]] = []
    for source, destination, alternate in hops:
        rows.append(
            {
                "source": source.name,
                "destination": _name(destination),
                "destination_type": "exchange" if isinstance(destination, Exchange) else "queue",
                "alternate": alternate,
            }
        )
    return json_response({"routed": bool(queues), "queues": [_name(queue) for queue in queues], "hops": rows})


ROUTES = [Route("POST", "/api/exchanges/{vhost}/{name}/route", route, Gate.VHOST)]
