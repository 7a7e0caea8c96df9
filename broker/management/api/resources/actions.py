"""POST /api/queues/{v}/{q}/actions, POST /api/rebalance/queues and /api/auth/attempts/{node}[/source]
(rabbit_mgmt_wm_queue_actions, _rebalance_queues, _auth_attempts in RabbitMQ 3.13)."""

from __future__ import annotations

from aiohttp import web

from broker.management.api.auth import Gate
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, json_response, no_content, not_found

# 3.13 spawns rabbit_amqqueue:sync_mirrors / cancel_sync_mirrors and answers 204 whatever they return; for a
# queue that is not mirrored (every WarrenMQ queue: there is one node) there is nothing to do.
_ACTIONS = ("sync", "cancel_sync")


async def queue_action(request: web.Request, context: ManagementContext) -> web.Response:
    # A missing queue is 404, as resource_exists answers in RabbitMQ's later releases (3.10.8 crashes: 500).
    vhost = context.vhost(request.match_info["vhost"])
    if request.match_info["name"] not in vhost.queues:
        raise not_found()
    action = (await body_json(request, ("action",)))["action"]
    # 4.0 removed classic mirrored queues and their actions: every action is unknown.
    if action not in _ACTIONS or context.broker.profile.management_4x:
        raise bad_request(["unknown", action])  # {unknown, Action}, a tuple rendered as a JSON list
    return no_content()


async def rebalance_queues(request: web.Request, context: ManagementContext) -> web.Response:
    # One node: every queue leader is already where a rebalance would put it.
    return no_content()


def _node(request: web.Request, context: ManagementContext) -> None:
    if request.match_info["node"] != context.node:
        raise not_found()


async def get_auth_attempts(request: web.Request, context: ManagementContext) -> web.Response:
    _node(request, context)
    return json_response(context.broker.auth_attempts.rows())


async def get_auth_attempts_by_source(request: web.Request, context: ManagementContext) -> web.Response:
    # rabbit.track_auth_attempt_source is false by default, so RabbitMQ keeps no per-source rows.
    _node(request, context)
    return json_response([])


async def delete_auth_attempts(request: web.Request, context: ManagementContext) -> web.Response:
    _node(request, context)
    context.broker.auth_attempts.reset()
    return no_content()


ROUTES = [
    Route("POST", "/api/queues/{vhost}/{name}/actions", queue_action, Gate.ADMIN),
    Route("POST", "/api/rebalance/queues", rebalance_queues, Gate.ADMIN),
    Route("GET", "/api/auth/attempts/{node}", get_auth_attempts, Gate.MONITOR),
    Route("DELETE", "/api/auth/attempts/{node}", delete_auth_attempts, Gate.MONITOR),
    Route("GET", "/api/auth/attempts/{node}/source", get_auth_attempts_by_source, Gate.MONITOR),
    Route("DELETE", "/api/auth/attempts/{node}/source", delete_auth_attempts, Gate.MONITOR),
]
