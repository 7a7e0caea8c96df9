"""/api/users: list, without-permissions, bulk-delete, GET/PUT/DELETE one (password, or password_hash with
hashing_algorithm; tags mandatory), and a user's permissions and topic permissions. Administrator only."""

from __future__ import annotations

from aiohttp import web

from broker.core.access.access import AccessError, parse_tags
from broker.core.access.passwords import ALGORITHMS, DEFAULT_ALGORITHM
from broker.management.api.auth import Gate
from broker.management.api.paging import reply, reply_list
from broker.management.api.routing import Route, body_json, require
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, no_content, not_found
from broker.management.views.serialize import permission_json, topic_permission_json, user_json


async def list_users(request: web.Request, context: ManagementContext) -> web.Response:
    users = context.broker.access.users.values()
    return reply_list(request, [user_json(user) for user in users])


async def list_without_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    users = context.broker.access.users_without_permissions()
    return reply_list(request, [user_json(user) for user in users])


async def get_user(request: web.Request, context: ManagementContext) -> web.Response:
    user = require(context.broker.access.users.get(request.match_info["user"]))
    return reply(request, user_json(user))


async def put_user(request: web.Request, context: ManagementContext) -> web.Response:
    name = request.match_info["user"]
    body = await body_json(request)
    if "tags" not in body:
        raise bad_request("tags_not_present")
    algorithm = body.get("hashing_algorithm", DEFAULT_ALGORITHM)
    if algorithm not in ALGORITHMS:
        raise bad_request(f"unknown hashing algorithm {algorithm}")
    existed = name in context.broker.access.users
    try:
        tags = parse_tags(body["tags"])
        if isinstance(body.get("password"), str):
            context.broker.save_user(name, password=body["password"], tags=tags)
        else:
            # No password: RabbitMQ keeps the user unable to log in with one (password_hash "").
            password_hash = body.get("password_hash") or ""
            if not isinstance(password_hash, str):
                raise bad_request("password_hash must be a string")
            context.broker.save_user(name, password_hash=(password_hash, algorithm), tags=tags)
    except AccessError as error:
        raise bad_request(error.reason) from None
    return no_content(204 if existed else 201)


async def delete_user(request: web.Request, context: ManagementContext) -> web.Response:
    if not context.broker.delete_user(request.match_info["user"]):
        raise not_found()
    return no_content()


async def bulk_delete(request: web.Request, context: ManagementContext) -> web.Response:
    body = await body_json(request, ("users",))
    names = body["users"]
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise bad_request("users must be a list of names")
    for name in names:
        # rabbit_mgmt_wm_users_bulk_delete: deleted in order; the first missing one stops it with a 400
        # (4.0.5 goes on: a missing user is already deleted).
        if not context.broker.delete_user(name) and not context.broker.profile.management_4x:
            raise bad_request(["no_such_user", name])
    return no_content()


async def user_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    name = require(context.broker.access.users.get(request.match_info["user"])).name
    rows = [permission_json(p) for p in context.broker.access.permissions.values() if p.user == name]
    return reply_list(request, rows, ("vhost",))


async def user_topic_permissions(request: web.Request, context: ManagementContext) -> web.Response:
    name = require(context.broker.access.users.get(request.match_info["user"])).name
    rows = [
        topic_permission_json(p) for p in context.broker.access.topic_permissions.values() if p.user == name
    ]
    return reply_list(request, rows, ("vhost",))


ROUTES = [
    Route("GET", "/api/users", list_users, Gate.ADMIN),
    Route("GET", "/api/users/without-permissions", list_without_permissions, Gate.ADMIN),
    Route("POST", "/api/users/bulk-delete", bulk_delete, Gate.ADMIN),
    Route("GET", "/api/users/{user}", get_user, Gate.ADMIN),
    Route("PUT", "/api/users/{user}", put_user, Gate.ADMIN),
    Route("DELETE", "/api/users/{user}", delete_user, Gate.ADMIN),
    Route("GET", "/api/users/{user}/permissions", user_permissions, Gate.ADMIN),
    Route("GET", "/api/users/{user}/topic-permissions", user_topic_permissions, Gate.ADMIN),
]
