"""WarrenMQ's own /api/warrenmq/plugins, which rabbitmq-plugins calls after rewriting enabled_plugins (as
RabbitMQ's applies the new plugin set to the running node): the exchange-type plugins start and stop at
once; the management and prometheus listeners and the event exchange change at the next start (reported as
restart_needed)."""

from __future__ import annotations

from aiohttp import web

from broker.config.plugins import (
    EVENT_EXCHANGE,
    EXCHANGE_TYPE_PLUGINS,
    MANAGEMENT,
    PROMETHEUS,
    disabled_exchange_types,
)
from broker.management.api.auth import Gate
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, json_response

_LIVE = frozenset(EXCHANGE_TYPE_PLUGINS.values())


async def get_plugins(request: web.Request, context: ManagementContext) -> web.Response:
    return json_response({"running": context.running_plugins})


async def put_plugins(request: web.Request, context: ManagementContext) -> web.Response:
    body = await body_json(request, ("enabled",))
    enabled = body["enabled"]
    if not isinstance(enabled, list) or not all(isinstance(name, str) for name in enabled):
        raise bad_request("enabled must be a list of plugin names")
    running = set(context.running_plugins)
    started = sorted(name for name in _LIVE if name in enabled and name not in running)
    stopped = sorted(name for name in _LIVE if name not in enabled and name in running)
    context.broker.disable_exchange_types(disabled_exchange_types(tuple(enabled)))
    context.running_plugins = sorted((running - set(stopped)) | set(started))
    restart = [
        name for name in (MANAGEMENT, PROMETHEUS, EVENT_EXCHANGE) if (name in enabled) != (name in running)
    ]
    return json_response(
        {
            "running": context.running_plugins,
            "started": started,
            "stopped": stopped,
            "restart_needed": restart,
        }
    )


ROUTES = [
    Route("GET", "/api/warrenmq/plugins", get_plugins, Gate.ADMIN),
    Route("PUT", "/api/warrenmq/plugins", put_plugins, Gate.ADMIN),
]
