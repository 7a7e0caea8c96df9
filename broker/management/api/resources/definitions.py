"""GET/POST /api/definitions and /api/definitions/{vhost}: export and import RabbitMQ definitions JSON."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.management.api.auth import Gate
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.definitions.document import DefinitionsError, apply_definitions, export_definitions
from broker.management.errors import bad_request, json_response, no_content

# The sections of a per-vhost export (rabbit_mgmt_wm_definitions vhost_definitions), objects without "vhost".
_VHOST_SECTIONS = ("parameters", "policies", "queues", "exchanges", "bindings")


async def get_definitions(request: web.Request, context: ManagementContext) -> web.Response:
    return json_response(export_definitions(context.broker))


async def post_definitions(request: web.Request, context: ManagementContext) -> web.Response:
    body = await body_json(request)
    try:
        apply_definitions(context.broker, body, "definitions")
    except DefinitionsError as error:
        raise bad_request(str(error)) from None
    return no_content()


async def get_vhost_definitions(request: web.Request, context: ManagementContext) -> web.Response:
    name = context.vhost(request.match_info["vhost"]).name
    whole = export_definitions(context.broker)
    body: dict[str, Any] = {
        key: whole[key] for key in ("rabbit_version", "rabbitmq_version", "product_name", "product_version")
    }
    for section in _VHOST_SECTIONS:
        body[section] = [
            {key: value for key, value in item.items() if key != "vhost"}
            for item in whole[section]
            if item.get("vhost") == name
        ]
    return json_response(body)


async def post_vhost_definitions(request: web.Request, context: ManagementContext) -> web.Response:
    name = context.vhost(request.match_info["vhost"]).name
    body = await body_json(request)
    scoped = {
        section: [
            {**item, "vhost": name} if isinstance(item, dict) else item for item in body.get(section) or []
        ]
        for section in _VHOST_SECTIONS
    }
    try:
        apply_definitions(context.broker, scoped, "definitions")
    except DefinitionsError as error:
        raise bad_request(str(error)) from None
    return no_content()


ROUTES = [
    Route("GET", "/api/definitions", get_definitions, Gate.ADMIN),
    Route("POST", "/api/definitions", post_definitions, Gate.ADMIN),
    Route("GET", "/api/all-configuration", get_definitions, Gate.ADMIN),
    Route("GET", "/api/definitions/{vhost}", get_vhost_definitions, Gate.ADMIN),
    Route("POST", "/api/definitions/{vhost}", post_vhost_definitions, Gate.ADMIN),
]
