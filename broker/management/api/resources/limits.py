"""/api/vhost-limits and /api/user-limits (RabbitMQ 3.13's paths): list, list for one vhost or user, and
PUT/DELETE one limit as ``{"value": N}``. Setting and clearing need administrator; reading vhost limits any
user who sees the vhost. Answers as RabbitMQ 3.10.8's: PUT and DELETE are 204 (a DELETE of an unset limit
too), a vhost whose limits were all cleared lists ``[]``, a vhost-limit error is wrapped in "Validation
failed", a user-limit error is not, and an unknown user is 400 ``["no_such_user", name]``."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.core.policies.runtime_parameters import USER_LIMITS, ParameterError, check_limits
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import ApiError, bad_request, json_response, no_content, not_found


def limits_value(limits: dict[str, int]) -> dict[str, int] | list[Any]:
    """An empty limits proplist is printed as the JSON list ``[]``."""
    return dict(limits) if limits else []


async def list_vhost_limits(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = request.match_info.get("vhost")
    if vhost is not None:
        context.vhost(vhost)
    visible = visible_vhosts(context, current_user(request))
    held = context.broker.parameters.vhost_limits
    names = [vhost] if vhost is not None else sorted(held)
    rows = [
        {"vhost": name, "value": limits_value(held[name])}
        for name in names
        if name in held and name in visible and (vhost is None or held[name])
    ]
    return json_response(rows)


async def put_vhost_limit(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, name = request.match_info["vhost"], request.match_info["name"]
    body = await body_json(request, ("value",))
    if vhost not in context.broker.vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    held = dict(context.broker.parameters.vhost_limits.get(vhost, {}))
    held.pop(name, None)
    try:
        context.broker.set_vhost_limits(vhost, {name: body["value"], **held})
    except ParameterError as error:
        raise bad_request(f"Validation failed\n\n{error.reason}\n") from None
    return no_content()


async def delete_vhost_limit(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, name = request.match_info["vhost"], request.match_info["name"]
    context.vhost(vhost)
    held = context.broker.parameters.vhost_limits.get(vhost)
    if held is not None and name in held:
        context.broker.set_vhost_limits(vhost, {k: v for k, v in held.items() if k != name})
    return no_content()


async def list_user_limits(request: web.Request, context: ManagementContext) -> web.Response:
    name = request.match_info.get("user")
    users = context.broker.access.users
    if name is not None and name not in users:
        raise not_found()
    names = [name] if name is not None else sorted(users)
    rows = [{"user": n, "value": dict(users[n].limits)} for n in names if n in users and users[n].limits]
    return json_response(rows)


async def put_user_limit(request: web.Request, context: ManagementContext) -> web.Response:
    user, name = request.match_info["user"], request.match_info["name"]
    body = await body_json(request, ("value",))
    existing = context.broker.access.users.get(user)
    if existing is None:
        raise bad_request(["no_such_user", user])
    try:
        checked = check_limits({name: body["value"]}, USER_LIMITS, "user-limits")
    except ParameterError as error:
        raise bad_request(error.reason) from None
    held = {k: v for k, v in existing.limits.items() if k != name}
    context.broker.set_user_limits(user, {**checked, **held})
    return no_content()


async def delete_user_limit(request: web.Request, context: ManagementContext) -> web.Response:
    user, name = request.match_info["user"], request.match_info["name"]
    existing = context.broker.access.users.get(user)
    if existing is not None and name in existing.limits:
        context.broker.set_user_limits(user, {k: v for k, v in existing.limits.items() if k != name})
    return no_content()


ROUTES = [
    Route("GET", "/api/vhost-limits", list_vhost_limits, Gate.MANAGEMENT),
    Route("GET", "/api/vhost-limits/{vhost}", list_vhost_limits, Gate.VHOST),
    Route("PUT", "/api/vhost-limits/{vhost}/{name}", put_vhost_limit, Gate.ADMIN),
    Route("DELETE", "/api/vhost-limits/{vhost}/{name}", delete_vhost_limit, Gate.ADMIN),
    Route("GET", "/api/user-limits", list_user_limits, Gate.ADMIN),
    Route("GET", "/api/user-limits/{user}", list_user_limits, Gate.ADMIN),
    Route("PUT", "/api/user-limits/{user}/{name}", put_user_limit, Gate.ADMIN),
    Route("DELETE", "/api/user-limits/{user}/{name}", delete_user_limit, Gate.ADMIN),
]
