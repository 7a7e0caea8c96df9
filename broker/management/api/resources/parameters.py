"""/api/parameters (vhost-scoped runtime parameters) and /api/global-parameters.

WarrenMQ runs no plugin that registers a parameter component (federation, shovel), so the components are
RabbitMQ's built-in ones: ``policy``, ``operator_policy`` and ``vhost-limits``; any other is refused as
RabbitMQ without the plugin refuses it ("component X not found"). The unfiltered list leaves policies out
(rabbit_mgmt_wm_parameters). Global parameters hold ``cluster_name`` (once set) and ``internal_cluster_id``
besides the ones users set. Parameters need policymaker, global parameters administrator.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from aiohttp import web

from broker.core.policies.policies import Policy
from broker.core.policies.runtime_parameters import ParameterError
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.paging import reply, reply_list
from broker.management.api.resources.limits import limits_value
from broker.management.api.resources.policies import parse_body
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import ApiError, bad_request, json_response, no_content, not_found

_COMPONENTS = ("policy", "operator_policy", "vhost-limits")
CLUSTER_ID = "internal_cluster_id"


def _policy_value(policy: Policy) -> dict[str, Any]:
    return {
        "pattern": policy.pattern,
        "definition": dict(policy.definition),
        "priority": policy.priority,
        "apply-to": policy.apply_to,
    }


def _row(value: Any, vhost: str, component: str, name: str) -> dict[str, Any]:
    return {"value": value, "vhost": vhost, "component": component, "name": name}


def _rows(context: ManagementContext, components: tuple[str, ...], vhosts: list[str]) -> list[dict[str, Any]]:
    broker, rows = context.broker, []
    for vhost in vhosts:
        held = broker.parameters.vhost_limits.get(vhost)
        if "vhost-limits" in components and held is not None:
            rows.append(_row(limits_value(held), vhost, "vhost-limits", "limits"))
        for component in ("operator_policy", "policy"):
            if component in components:
                for policy in broker.policies.listing(vhost, component == "operator_policy"):
                    rows.append(_row(_policy_value(policy), vhost, component, policy.name))
    return rows


async def list_parameters(request: web.Request, context: ManagementContext) -> web.Response:
    component = request.match_info.get("component")
    vhost = request.match_info.get("vhost")
    if vhost is not None:
        context.vhost(vhost)
    visible = visible_vhosts(context, current_user(request))
    vhosts = [vhost] if vhost is not None else visible
    components = ("vhost-limits", "operator_policy") if component is None else (component,)
    # rabbit_mgmt_wm_parameters answers with reply_list: sorted by vhost, then name.
    return reply_list(request, _rows(context, components, [v for v in vhosts if v in visible]))


async def get_parameter(request: web.Request, context: ManagementContext) -> web.Response:
    component, vhost, name = (request.match_info[k] for k in ("component", "vhost", "name"))
    context.vhost(vhost)
    for row in _rows(context, (component,), [vhost]):
        if row["name"] == name:
            return reply(request, row)
    raise not_found()


async def put_parameter(request: web.Request, context: ManagementContext) -> web.Response:
    component, vhost, name = (request.match_info[k] for k in ("component", "vhost", "name"))
    body = await body_json(request, ("value",))
    if vhost not in context.broker.vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    if component not in _COMPONENTS:
        raise bad_request(f"Validation failed\n\ncomponent {component} not found\n")
    value, broker = body["value"], context.broker
    if component == "vhost-limits":
        existed = vhost in broker.parameters.vhost_limits
        try:
            broker.set_vhost_limits(vhost, value if isinstance(value, dict) else {})
        except ParameterError as error:
            raise bad_request(f"Validation failed\n\n{error.reason}\n") from None
    else:
        operator = component == "operator_policy"
        policy = parse_body(vhost, name, value if isinstance(value, dict) else {}, operator)
        existed = broker.policies.get(vhost, name, operator) is not None
        broker.put_policy(policy, operator)
    return no_content(204 if existed else 201)


async def delete_parameter(request: web.Request, context: ManagementContext) -> web.Response:
    component, vhost, name = (request.match_info[k] for k in ("component", "vhost", "name"))
    broker = context.broker
    if component == "vhost-limits" and vhost in broker.parameters.vhost_limits:
        broker.set_vhost_limits(vhost, None)
    elif component not in ("policy", "operator_policy") or not broker.delete_policy(
        vhost, name, component == "operator_policy"
    ):
        raise not_found()
    return no_content()


def ensure_cluster_id(context: ManagementContext) -> None:
    """RabbitMQ creates internal_cluster_id once, at first boot: "rabbitmq-cluster-id-" + 16 random bytes."""
    if CLUSTER_ID not in context.broker.parameters.global_parameters:
        token = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        # Made at boot in RabbitMQ, before its event exchange listens: no parameter.set notice.
        context.broker.set_global_parameter(CLUSTER_ID, f"rabbitmq-cluster-id-{token}", notify=False)


def _globals(context: ManagementContext) -> dict[str, Any]:
    ensure_cluster_id(context)
    held = dict(context.broker.parameters.global_parameters)
    imported = held.get("cluster_name")
    if isinstance(imported, str) and context.cluster_name == context.node:
        context.cluster_name = imported  # from a definitions file: the name RabbitMQ keeps as this parameter
    if context.cluster_name != context.node:
        held["cluster_name"] = context.cluster_name
    return held


async def list_global_parameters(request: web.Request, context: ManagementContext) -> web.Response:
    held = _globals(context)
    return json_response([{"name": name, "value": held[name]} for name in sorted(held)])


async def get_global_parameter(request: web.Request, context: ManagementContext) -> web.Response:
    name = request.match_info["name"]
    held = _globals(context)
    if name not in held:
        raise not_found()
    return reply(request, {"value": held[name], "name": name})


async def put_global_parameter(request: web.Request, context: ManagementContext) -> web.Response:
    name = request.match_info["name"]
    body = await body_json(request, ("value",))
    existed = name in _globals(context)
    if name == "cluster_name":
        context.cluster_name = str(body["value"])
    context.broker.set_global_parameter(name, body["value"])
    return no_content(204 if existed else 201)


async def delete_global_parameter(request: web.Request, context: ManagementContext) -> web.Response:
    name = request.match_info["name"]
    held = name in _globals(context)
    if name == "cluster_name":
        context.cluster_name = context.node
    if not context.broker.clear_global_parameter(name) and not held:
        raise not_found()
    return no_content()


ROUTES = [
    Route("GET", "/api/parameters", list_parameters, Gate.POLICIES),
    Route("GET", "/api/parameters/{component}", list_parameters, Gate.POLICIES),
    Route("GET", "/api/parameters/{component}/{vhost}", list_parameters, Gate.POLICIES),
    Route("GET", "/api/parameters/{component}/{vhost}/{name}", get_parameter, Gate.POLICIES),
    Route("PUT", "/api/parameters/{component}/{vhost}/{name}", put_parameter, Gate.POLICIES),
    Route("DELETE", "/api/parameters/{component}/{vhost}/{name}", delete_parameter, Gate.POLICIES),
    Route("GET", "/api/global-parameters", list_global_parameters, Gate.ADMIN),
    Route("GET", "/api/global-parameters/{name}", get_global_parameter, Gate.ADMIN),
    Route("PUT", "/api/global-parameters/{name}", put_global_parameter, Gate.ADMIN),
    Route("DELETE", "/api/global-parameters/{name}", delete_global_parameter, Gate.ADMIN),
]
