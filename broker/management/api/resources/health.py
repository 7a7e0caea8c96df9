"""GET /api/aliveness-test/{vhost} and /api/health/checks/*: each check is real, and answers 503 with
RabbitMQ's failure body when its condition does not hold."""

from __future__ import annotations

import datetime
import re
from collections.abc import Awaitable, Callable

from aiohttp import web

from broker.core.queues.queue_admin import basic_get, purge_queue
from broker.management.api import cert_expiry
from broker.management.api.auth import Gate
from broker.management.api.messages import build_message
from broker.management.api.routing import Route
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, json_response, not_found
from protocol.errors import AMQPError

OK = {"status": "ok"}
ALIVENESS_QUEUE = "aliveness-test"
# rabbit_mgmt_wm_health_check_protocol_listener accepts these spellings of the AMQP 0-9-1 protocol.
_PROTOCOL_ALIASES = {
    "amqp": "amqp",
    "amqp091": "amqp",
    "amqp0-9-1": "amqp",
    "amqp0.9.1": "amqp",
    "amqp-0-9-1": "amqp",
    "http": "http",
    "management": "http",
}


def _failed(**fields: object) -> web.Response:
    return json_response({"status": "failed", **fields}, 503)


async def aliveness_test(request: web.Request, context: ManagementContext) -> web.Response:
    """Declare the aliveness-test queue, publish a message to it and get it back (as RabbitMQ does; the queue
    stays, as in RabbitMQ)."""
    vhost = context.vhost(request.match_info["vhost"])
    try:
        queue = vhost.declare_queue(ALIVENESS_QUEUE, owner=None)
        purge_queue(queue)
        message = build_message(
            "", {"routing_key": ALIVENESS_QUEUE, "payload": "test_message", "payload_encoding": "string"}
        )
        vhost.publish("", message)
        envelope = basic_get(queue)
    except AMQPError as error:
        return _failed(reason=error.reply_text)
    if envelope is None or envelope.message.body != b"test_message":
        return _failed(reason="aliveness test message was not delivered")
    return json_response(OK)


def _alarms_check(reason: str) -> Callable[[web.Request, ManagementContext], Awaitable[web.Response]]:
    async def check(request: web.Request, context: ManagementContext) -> web.Response:
        # rabbit_mgmt_wm_health_check_alarms / _local_alarms: 503 with the alarms as rabbit_alarm's maps.
        resources = context.server.alarms.resources
        if not resources:
            return json_response(OK)
        alarms = [{"node": context.node, "resource": resource} for resource in resources]
        return _failed(reason=reason, alarms=alarms)

    return check


async def certificate_expiration(request: web.Request, context: ManagementContext) -> web.Response:
    """rabbit_mgmt_wm_health_check_certificate_expiration: 503 listing each TLS listener one of whose
    certificates (certfile or cacertfile) expires within the period."""
    within, unit = request.match_info["within"], request.match_info["unit"].lower()
    if not re.fullmatch(r"[+-]?[0-9]+", within):
        raise bad_request("Invalid expiration value.")
    if unit not in _UNIT_SECONDS:
        raise bad_request("Time unit not recognised. Supported units: days, weeks, months, years.")
    now = datetime.datetime.now(datetime.UTC)
    deadline = now + datetime.timedelta(seconds=int(within) * _UNIT_SECONDS[unit])
    config = context.server.config
    listeners = (
        ("amqp/ssl", context.server.ssl_port, config.ssl_options),
        ("https", context.https_port, config.management_ssl),
    )
    expired = []
    for protocol, port, options in listeners:
        if not port:
            continue
        certfile = cert_expiry.expiring(options.certfile, now, deadline)
        cacertfile = cert_expiry.expiring(options.cacertfile, now, deadline)
        if not certfile and not cacertfile:
            continue
        expired.append(
            {
                "node": context.node,
                "protocol": protocol,
                "interface": config.host,
                "port": port,
                "certfile": options.certfile,
                "cacertfile": options.cacertfile,
                "certfile_expires_on": _expires_on(certfile),
                "cacertfile_expires_on": _expires_on(cacertfile),
            }
        )
    if not expired:
        return json_response(OK)
    return _failed(reason="Certificates expiring", expired=expired)


# do_convert: a month is a twelfth of a 365-day year.
_UNIT_SECONDS = {"days": 86400, "weeks": 86400 * 7, "months": 86400 * 365 / 12, "years": 86400 * 365}


def _expires_on(found: list[str] | str) -> list[str] | dict[str, str]:
    return {"error": found} if isinstance(found, str) else found


def _ports(context: ManagementContext) -> list[int]:
    ports = (context.http_port, context.https_port, context.server.port, context.server.ssl_port)
    return [port for port in ports if port]


async def port_listener(request: web.Request, context: ManagementContext) -> web.Response:
    raw = request.match_info["port"]
    if not raw.isdigit():
        raise bad_request(f"Invalid port: {raw}")
    port = int(raw)
    ports = _ports(context)
    if port not in ports:
        return _failed(reason="No active listener", missing=port, ports=ports)
    return json_response({"status": "ok", "port": port})


async def protocol_listener(request: web.Request, context: ManagementContext) -> web.Response:
    raw = request.match_info["protocol"]
    protocol = _PROTOCOL_ALIASES.get(raw.lower())
    active = ["http", "amqp"]
    if protocol is None:
        return _failed(reason="No active listener", missing=raw, protocols=active)
    return json_response({"status": "ok", "protocol": protocol})


def _atom(name: str) -> str:
    """An Erlang atom as ~p prints it: bare when it may be, else quoted."""
    return name if re.fullmatch(r"[a-z][A-Za-z0-9_@]*", name) else "'" + name.replace("'", "\\'") + "'"


async def node_health(request: web.Request, context: ManagementContext) -> web.Response:
    """GET /api/healthchecks/node[/{node}] (rabbit_mgmt_wm_healthchecks, still routed in 3.13 beside the
    newer checks): rabbit_health_check:node asks the channels and queues (they answer: one process), the
    partitions (none: one node) and the alarms, failing with 503 and the alarms printed as Erlang terms; an
    unknown node is 404."""
    if request.match_info.get("node", context.node) != context.node:
        raise not_found()
    resources = context.server.alarms.resources
    if resources:
        node = _atom(context.node)
        alarms = ",".join(f"{{{{resource_limit,{resource},{node}}},[]}}" for resource in resources)
        return _failed(reason=f"resource alarm(s) in effect:[{alarms}]")
    return json_response(OK)


async def virtual_hosts(request: web.Request, context: ManagementContext) -> web.Response:
    return json_response(OK)  # a vhost exists only while it runs


async def single_node(request: web.Request, context: ManagementContext) -> web.Response:
    return json_response({"status": "ok", "reason": "single node cluster"})


async def is_in_service(request: web.Request, context: ManagementContext) -> web.Response:
    """GET /api/health/checks/is-in-service (RabbitMQ 4.1, rabbit_mgmt_wm_health_check_is_in_service): 200
    when the node is booted, running and ready to serve clients, else 503; the readiness probe a load
    balancer or Kubernetes routes by. Every check answers 503 on a standby anyway (``_serving``)."""
    return json_response(OK)


Handler = Callable[[web.Request, ManagementContext], Awaitable[web.StreamResponse]]
STANDBY_REASON = "node is a high-availability standby: it serves no clients until it is elected active"


def _serving(handler: Handler) -> Handler:
    """A standby of a high-availability pair (broker/ha) opens no AMQP listener: every health check answers
    503, as RabbitMQ's do for a node that is not ready to serve clients, so that nothing routes to it."""

    async def check(request: web.Request, context: ManagementContext) -> web.StreamResponse:
        ha = context.server.ha
        if ha is not None and not ha.active:
            return _failed(reason=STANDBY_REASON)
        return await handler(request, context)

    return check


_CHECKS = [
    Route("GET", "/api/aliveness-test/{vhost}", aliveness_test, Gate.VHOST),
    Route("GET", "/api/health/checks/alarms", _alarms_check("There are alarms in effect in the cluster")),
    Route("GET", "/api/health/checks/local-alarms", _alarms_check("There are alarms in effect on the node")),
    Route("GET", "/api/health/checks/certificate-expiration/{within}/{unit}", certificate_expiration),
    Route("GET", "/api/health/checks/port-listener/{port}", port_listener),
    Route("GET", "/api/health/checks/protocol-listener/{protocol}", protocol_listener),
    Route("GET", "/api/health/checks/virtual-hosts", virtual_hosts),
    Route("GET", "/api/health/checks/is-in-service", is_in_service),
    Route("GET", "/api/healthchecks/node", node_health),
    Route("GET", "/api/healthchecks/node/{node}", node_health),
    Route("GET", "/api/health/checks/node-is-mirror-sync-critical", single_node),
    Route("GET", "/api/health/checks/node-is-quorum-critical", single_node),
]
ROUTES = [Route(check.method, check.path, _serving(check.handler), check.gate) for check in _CHECKS]
