"""/api/policies and /api/operator-policies: list (all, per vhost), and GET/PUT/DELETE one. Policies need the
policymaker tag (or administrator), operator policies administrator. A change applies to running queues
and exchanges before the answer goes out.

As RabbitMQ 3.10.8 answers: lists are in priority order (lowest first, ties by name) and never paginated;
an invalid body is 400 "Validation failed\\n\\n<reasons>\\n" (for policies with ``<`` and ``>`` escaped as
HTML entities, for operator policies not); an unknown vhost is 404 ``vhost_not_found``.
"""

from __future__ import annotations

from typing import Any

import structlog
from aiohttp import web

from broker.core.policies.policies import Policy, PolicyError, parse_policy
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.paging import reply, sort_items
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import ApiError, bad_request, json_response, no_content, not_found

log = structlog.get_logger("warrenmq.policies")


def _operator(request: web.Request) -> bool:
    return request.path.startswith("/api/operator-policies")


def validation_failed(reasons: list[str], escape: bool) -> ApiError:
    text = "".join(f"{reason}\n" for reason in reasons)
    if escape:
        text = text.replace("<", "&lt;").replace(">", "&gt;")
    return bad_request(f"Validation failed\n\n{text}")


def policy_rows(
    context: ManagementContext, request: web.Request, vhost: str | None, operator: bool
) -> list[Policy]:
    visible = set(visible_vhosts(context, current_user(request)))
    return [p for p in context.broker.policies.listing(vhost, operator) if p.vhost in visible]


async def list_policies(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = request.match_info.get("vhost")
    if vhost is not None:
        context.vhost(vhost)
    rows = [p.as_json() for p in policy_rows(context, request, vhost, _operator(request))]
    return json_response(sort_items(rows, request.query, ()))


async def get_policy(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, name = request.match_info["vhost"], request.match_info["name"]
    policy = context.broker.policies.get(vhost, name, _operator(request))
    if policy is None or vhost not in context.broker.vhosts:
        raise not_found()
    return reply(request, policy.as_json())


def parse_body(vhost: str, name: str, body: dict[str, Any], operator: bool) -> Policy:
    try:
        return parse_policy(vhost, name, body, operator)
    except PolicyError as error:
        raise validation_failed(error.reasons, escape=not operator) from None


async def put_policy(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, name = request.match_info["vhost"], request.match_info["name"]
    operator = _operator(request)
    body = await body_json(request, ("pattern", "definition"))
    if vhost not in context.broker.vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    policy = parse_body(vhost, name, body, operator)
    existed = context.broker.policies.get(vhost, name, operator) is not None
    context.broker.put_policy(policy, operator)
    # rabbit_policy:parse_set0/8's line (rabbitmqctl set_policy and set_operator_policy come here too).
    log.info(
        f"Successfully set policy '{name}' matching {policy.apply_to} names in virtual host '{vhost}' "
        f"using pattern '{policy.pattern}'",
        domain="rabbitmq",
        vhost=vhost,
        policy=name,
    )
    return no_content(204 if existed else 201)


async def delete_policy(request: web.Request, context: ManagementContext) -> web.Response:
    vhost, name = request.match_info["vhost"], request.match_info["name"]
    if not context.broker.delete_policy(vhost, name, _operator(request)):
        raise not_found()
    # RabbitMQ 3.10 logs nothing when a policy is cleared: debug, so that an info log stays RabbitMQ's.
    log.debug(
        f"Cleared policy '{name}' in virtual host '{vhost}'", domain="rabbitmq", vhost=vhost, policy=name
    )
    return no_content()


ROUTES = [
    *(
        route
        for base, gate in (("/api/policies", Gate.POLICIES), ("/api/operator-policies", Gate.ADMIN))
        for route in (
            Route("GET", base, list_policies, gate),
            Route("GET", base + "/{vhost}", list_policies, gate),
            Route("GET", base + "/{vhost}/{name}", get_policy, gate),
            Route("PUT", base + "/{vhost}/{name}", put_policy, gate),
            Route("DELETE", base + "/{vhost}/{name}", delete_policy, gate),
        )
    )
]
