"""/api/permissions and /api/topic-permissions: list, and GET/PUT/DELETE for one (vhost, user). Administrator
only. Invalid regexes and unknown users or vhosts are refused before anything changes."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from broker.core.access.access import AccessError
from broker.management.api.auth import Gate
from broker.management.api.paging import reply, reply_list
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, no_content, not_found
from broker.management.views.serialize import permission_json, topic_permission_json


def _target(request: web.Request, context: ManagementContext) -> tuple[str, str]:
    return request.match_info["vhost"], request.match_info["user"]


def _strings(body: dict[str, object], keys: tuple[str, ...]) -> list[str]:
    values = [body[key] for key in keys]
    if not all(isinstance(value, str) for value in values):
        raise bad_request("permissions must be strings")
    return [str(value) for value in values]


async def list_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    rows = [permission_json(p) for p in context.broker.access.permissions.values()]
    return reply_list(request, rows, ("vhost", "user"))


async def get_permission(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, user = _target(request, context)
    permission = context.broker.access.permissions.get((user, vhost))
    if permission is None or vhost not in context.broker.vhosts:
        raise not_found()
    return reply(request, permission_json(permission))


async def _grant_body(
    request: web.Request, context: ManagementContext, keys: tuple[str, ...]
) -> tuple[str, str, list[str]]:
    """The vhost, user and string fields of a PUT granting a permission; both must exist (400 otherwise)."""
    vhost, user = _target(request, context)
    values = _strings(await body_json(request, keys), keys)
    if vhost not in context.broker.vhosts or user not in context.broker.access.users:
        raise bad_request("vhost_or_user_not_found")
    return vhost, user, values


def _granted(existed: bool, grant: Callable[[], object]) -> web.Response:
    """201 for a new permission, 204 for a replaced one; an invalid one is 400 with the access reason."""
    try:
        grant()
    except AccessError as error:
        raise bad_request(error.reason) from None
    return no_content(204 if existed else 201)


async def put_permission(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, user, (configure, write, read) = await _grant_body(
        request, context, ("configure", "write", "read")
    )
    access = context.broker.access
    existed = (user, vhost) in access.permissions
    return _granted(existed, lambda: access.set_permission(user, vhost, configure, write, read))


async def delete_permission(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, user = _target(request, context)
    if not context.broker.access.clear_permission(user, vhost):
        raise not_found()
    return no_content()


async def list_topic_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    rows = [topic_permission_json(p) for p in context.broker.access.topic_permissions.values()]
    return reply_list(request, rows, ("vhost", "user"))


async def get_topic_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, user = _target(request, context)
    rows = [
        topic_permission_json(p)
        for (name, host, _), p in sorted(context.broker.access.topic_permissions.items())
        if name == user and host == vhost
    ]
    if not rows or vhost not in context.broker.vhosts:
        raise not_found()
    return reply_list(request, rows, ("exchange",))


async def put_topic_permission(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, user, (exchange, write, read) = await _grant_body(request, context, ("exchange", "write", "read"))
    access = context.broker.access
    # resource_exists is per (vhost, user): a second exchange's topic permission answers 204, as RabbitMQ.
    existed = any(key[:2] == (user, vhost) for key in access.topic_permissions)
    return _granted(existed, lambda: access.set_topic_permission(user, vhost, exchange, write, read))


async def delete_topic_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, user = _target(request, context)
    if not context.broker.access.clear_topic_permissions(user, vhost):
        raise not_found()
    return no_content()


ROUTES = [
    Route("GET", "/api/permissions", list_permissions, Gate.ADMIN),
    Route("GET", "/api/permissions/{vhost}/{user}", get_permission, Gate.ADMIN),
    Route("PUT", "/api/permissions/{vhost}/{user}", put_permission, Gate.ADMIN),
    Route("DELETE", "/api/permissions/{vhost}/{user}", delete_permission, Gate.ADMIN),
    Route("GET", "/api/topic-permissions", list_topic_permissions, Gate.ADMIN),
    Route("GET", "/api/topic-permissions/{vhost}/{user}", get_topic_permissions, Gate.ADMIN),
    Route("PUT", "/api/topic-permissions/{vhost}/{user}", put_topic_permission, Gate.ADMIN),
    Route("DELETE", "/api/topic-permissions/{vhost}/{user}", delete_topic_permissions, Gate.ADMIN),
]
