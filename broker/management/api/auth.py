"""Who is calling and what their tags let them see (rabbit_mgmt_util:is_authorized*): Basic credentials
checked against the broker's users, then a gate per route."""

from __future__ import annotations

import base64
import binascii
from enum import Enum

from aiohttp import web

from broker.config.cookie import ACTING_USER
from broker.core.access.access import ADMINISTRATOR, User
from broker.management.context import ManagementContext
from broker.management.errors import ApiError, not_authorised

REALM = 'Basic realm="RabbitMQ Management"'
USER_KEY = web.RequestKey("user", User)
# True on the application serving the CLI channel.
CLI_CHANNEL_KEY = web.AppKey("cli_channel", bool)


class Gate(Enum):
    """The check a route applies after login, with RabbitMQ's refusal reason."""

    PUBLIC = "public"  # no login (GET /api/auth, which the UI reads before logging in)
    MANAGEMENT = ""  # any user with a management tag
    ADMIN = "Not administrator user"
    MONITOR = "Not monitor user"
    VHOST = "User not authorised to access virtual host"
    POLICIES = "User not authorised to access object"


def credentials(request: web.Request) -> tuple[str, str] | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


def cookie_user(request: web.Request) -> User | None:
    """The CLIs' acting user on the CLI channel, whose connections proved the node's Erlang cookie
    (broker/management/control.py), as RabbitMQ's CLIs authenticate with the cookie and not a user's
    password; None on the HTTP listener, and for a CLI request carrying a user's credentials
    (``authenticate_user`` checks those)."""
    if not request.config_dict.get(CLI_CHANNEL_KEY) or "Authorization" in request.headers:
        return None
    return User(ACTING_USER, "", tags=(ADMINISTRATOR,))


def login(context: ManagementContext, request: web.Request) -> User:
    """The authenticated management user, or the 401 RabbitMQ answers (realm header on missing or bad
    credentials; "Not management user" for a user without a management tag)."""
    internal = cookie_user(request)
    if internal is not None:
        return internal
    given = credentials(request)
    if given is None:
        raise ApiError(401, "", "", {"WWW-Authenticate": REALM})
    user = context.broker.access.authenticate(*given)
    if user is None:
        context.broker.auth_attempts.record("http", False)
        if context.broker.profile.management_4x:
            raise ApiError(401, "not_authorized", "Not_Authorized")  # 4.0.5: no realm header
        raise ApiError(401, "not_authorized", "Login failed", {"WWW-Authenticate": REALM})
    if not user.is_management:
        context.broker.auth_attempts.record("http", False)
        raise not_authorised("Not management user")
    return user


def authorize(context: ManagementContext, request: web.Request, gate: Gate) -> User:
    """login and check_gate, counting the Basic login as rabbit_mgmt_util:is_authorized does (protocol
    "http": succeeded once the route's check passes, failed otherwise; the CLI's cookie is no login)."""
    user = login(context, request)
    internal = user is not context.broker.access.users.get(user.name)  # the cookie's acting user
    try:
        check_gate(context, request, user, gate)
    except ApiError:
        if not internal:
            context.broker.auth_attempts.record("http", False)
        raise
    if not internal:
        context.broker.auth_attempts.record("http", True)
    return user


def visible_vhosts(context: ManagementContext, user: User) -> list[str]:
    """Monitors and administrators see every vhost; other users the vhosts they have permissions in."""
    if user.is_monitor:
        return sorted(context.broker.vhosts)
    return [name for name in context.broker.access.login_vhosts(user.name) if name in context.broker.vhosts]


def check_gate(context: ManagementContext, request: web.Request, user: User, gate: Gate) -> None:
    vhost = request.match_info.get("vhost")
    in_vhost = (
        vhost is None
        or vhost not in context.broker.vhosts
        or vhost in context.broker.access.login_vhosts(user.name)
    )
    allowed = {
        Gate.PUBLIC: True,
        Gate.MANAGEMENT: True,
        Gate.ADMIN: user.is_administrator,
        Gate.MONITOR: user.is_monitor,
        Gate.VHOST: user.is_administrator or in_vhost,
        Gate.POLICIES: user.is_administrator or (user.is_policymaker and in_vhost),
    }[gate]
    if not allowed:
        raise not_authorised(gate.value)


def current_user(request: web.Request) -> User:
    return request[USER_KEY]
