"""The management HTTP API as one aiohttp application: a single route table gathered from the resource
modules, a middleware that logs the caller in and answers errors in RabbitMQ's shapes, and the readiness
probe. Unknown paths are 404 Object Not Found and known paths with another method 405 with ``Allow``, both
before authentication, as cowboy_rest answers them."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

import structlog
from aiohttp import web

from broker.config.cookie import ACTING_USER
from broker.core.model.acting import acting
from broker.management.api.auth import CLI_CHANNEL_KEY, USER_KEY, Gate, authorize
from broker.management.context import ManagementContext
from broker.management.errors import ApiError, json_response, not_found

if TYPE_CHECKING:
    from broker.core.topology.persistence import Persistence

from broker.management.api.resources import (
    actions,
    bindings,
    connections,
    definitions,
    exchanges,
    health,
    limits,
    message_history,
    nodes,
    overview,
    parameters,
    permissions,
    plugins,
    policies,
    queues,
    users,
    vhosts,
)
from broker.management.api.resources import (
    route as dry_run_route,
)
from broker.management.api.routing import Route
from broker.management.ui.static import add_ui_routes

log = structlog.get_logger("warrenmq.management")
CONTEXT_KEY = web.AppKey("context", ManagementContext)
ROUTES: list[Route] = [
    *overview.ROUTES,
    *nodes.ROUTES,
    *vhosts.ROUTES,
    *users.ROUTES,
    *permissions.ROUTES,
    *queues.ROUTES,
    *actions.ROUTES,
    *exchanges.ROUTES,
    *bindings.ROUTES,
    *connections.ROUTES,
    *definitions.ROUTES,
    *plugins.ROUTES,
    *health.ROUTES,
    *policies.ROUTES,
    *parameters.ROUTES,
    *limits.ROUTES,
    *dry_run_route.ROUTES,
    *message_history.ROUTES,
]
# The CLI tools prove the node cookie (ACTING_USER); RabbitMQ's CLI commands act as "rmq-cli" in events.
CLI_ACTOR = "rmq-cli"
_MAX_BODY_BYTES = 64 * 1024 * 1024  # definitions files can be large


def _endpoint(route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def endpoint(request: web.Request) -> web.StreamResponse:
        context = request.app[CONTEXT_KEY]
        if route.gate is Gate.PUBLIC:
            return await _handle(route, request, context)
        user = authorize(context, request, route.gate)
        request[USER_KEY] = user
        # user_who_performed_action of what this request does: set in the request task's own context, so
        # other requests and AMQP channels running while it awaits never see it (broker.core.model.acting).
        with acting(CLI_ACTOR if user.name == ACTING_USER else user.name):
            return await _handle(route, request, context)

    endpoint.__name__ = route.handler.__name__
    return endpoint


# A high-availability standby (broker/ha) holds no state of the pair's: a change made there would wait for
# its election and then meet the store's recovered state. It refuses changes until it is active.
STANDBY_REFUSES = "node is a high-availability standby: it changes nothing until it is elected active"


async def _handle(route: Route, request: web.Request, context: ManagementContext) -> web.StreamResponse:
    ha = context.server.ha
    if ha is not None and not ha.active and request.method not in ("GET", "HEAD"):
        return json_response({"error": "Service Unavailable", "reason": STANDBY_REFUSES}, 503)
    persistence = context.broker.persistence
    if persistence is None or request.method in ("GET", "HEAD"):
        return await route.handler(request, context)
    writes = persistence.writes
    response = await route.handler(request, context)
    if persistence.writes != writes:
        # RabbitMQ answers once its Mnesia transaction has committed: a 2xx means durable, so a kill -9
        # right after the reply loses nothing.
        await _committed(persistence, persistence.batch_id)
    return response


class _CommitSignal:
    """A CommitWaiter that sets a future (the store calls ``committed`` on the loop)."""

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future

    def committed(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


async def _committed(persistence: Persistence, batch_id: int) -> None:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    persistence.on_commit(batch_id, _CommitSignal(future))
    await future


@web.middleware
async def errors_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as error:
        return error.response()
    except web.HTTPMethodNotAllowed as error:
        # cowboy_rest: 405 with Allow and no body.
        return web.Response(status=405, headers={"Allow": allow_header(error.allowed_methods)})
    except web.HTTPNotFound:
        return not_found().response()
    except web.HTTPRequestEntityTooLarge:
        return ApiError(413, "bad_request", "request body too large").response()


# The order in which RabbitMQ's resources list their allowed_methods.
_METHOD_ORDER = ("HEAD", "GET", "PUT", "POST", "DELETE", "OPTIONS")


def allow_header(methods: Iterable[str]) -> str:
    """Every method of a path plus HEAD (where GET is) and OPTIONS, as cowboy_rest lists them."""
    allowed = set(methods) | {"OPTIONS"}
    if "GET" in allowed:
        allowed.add("HEAD")
    return ", ".join(method for method in _METHOD_ORDER if method in allowed)


def _options(allow: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def options(request: web.Request) -> web.StreamResponse:
        return web.Response(status=200, headers={"Allow": allow})  # no login, as rabbit_mgmt_util

    return options


async def ready(request: web.Request) -> web.Response:
    """Unauthenticated readiness probe (WarrenMQ's own): the AMQP port is bound once this answers."""
    return json_response({"status": "ok"})


# aiohttp's default segment pattern is ``[^{}/]+``: names with braces (legal in RabbitMQ) would 404. Any
# character but the separator, as RabbitMQ's cowboy routes take a percent-encoded segment.
_PLAIN_SEGMENT = re.compile(r"\{(\w+)\}")


def _route_path(path: str) -> str:
    return _PLAIN_SEGMENT.sub(r"{\1:[^/]+}", path)


def build_app(context: ManagementContext, cli: bool = False) -> web.Application:
    """The management API; ``cli``: the same routes for the CLI channel (broker/management/control.py),
    whose callers proved the Erlang cookie and act as the CLI user, without the UI and without starting
    the statistics sampler a second time."""
    app = web.Application(middlewares=[errors_middleware], client_max_size=_MAX_BODY_BYTES)
    app[CONTEXT_KEY] = context
    app[CLI_CHANNEL_KEY] = cli
    app.router.add_get("/ready", ready)
    if not cli:
        add_ui_routes(app)
    methods: dict[str, list[str]] = {}
    for route in ROUTES:
        endpoint = _endpoint(route)
        # cowboy's router takes a path with one trailing slash as the path without it (amqpstorm asks for
        # /api/healthchecks/node/).
        for path in (_route_path(route.path), _route_path(route.path) + "/"):
            app.router.add_route(route.method, path, endpoint)
            if route.method == "GET":
                app.router.add_route("HEAD", path, endpoint)
            methods.setdefault(path, []).append(route.method)
    for path, allowed in methods.items():
        app.router.add_route("OPTIONS", path, _options(allow_header(allowed)))
    if not cli:
        app.on_startup.append(_start_sampler)
        app.on_cleanup.append(_stop_sampler)
    return app


async def _start_sampler(app: web.Application) -> None:
    app[CONTEXT_KEY].sampler.start()


async def _stop_sampler(app: web.Application) -> None:
    app[CONTEXT_KEY].sampler.stop()
