"""GET /api/overview, /api/whoami, /api/cluster-name, /api/extensions, /api/feature-flags, /api/auth."""

from __future__ import annotations

import platform
from typing import Any

from aiohttp import web

from broker import __version__
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.paging import reply
from broker.management.api.routing import Route, body_json
from broker.management.context import ManagementContext
from broker.management.errors import bad_request, json_response, no_content
from broker.management.stats.stream_info import ready_messages
from broker.management.views.listeners import overview_listeners
from broker.management.views.serialize import RATE
from broker.management.views.serialize_stats import add_overview_stats

# The exchange types WarrenMQ implements, described as RabbitMQ describes them.
EXCHANGE_TYPES = [
    {"description": "AMQP direct exchange, as per the AMQP specification", "enabled": True, "name": "direct"},
    {"description": "AMQP fanout exchange, as per the AMQP specification", "enabled": True, "name": "fanout"},
    {
        "description": "AMQP headers exchange, as per the AMQP specification",
        "enabled": True,
        "name": "headers",
    },
    {"description": "AMQP topic exchange, as per the AMQP specification", "enabled": True, "name": "topic"},
]
_MESSAGE_STATS = [
    "ack",
    "confirm",
    "deliver",
    "deliver_get",
    "deliver_no_ack",
    "disk_reads",
    "disk_writes",
    "drop_unroutable",
    "get",
    "get_empty",
    "get_no_ack",
    "publish",
    "redeliver",
    "return_unroutable",
]
_CHURN = [
    "channel_closed",
    "channel_created",
    "connection_closed",
    "connection_created",
    "queue_created",
    "queue_declared",
    "queue_deleted",
]


def _counters(names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        out[name] = 0
        out[f"{name}_details"] = dict(RATE)
    return out


async def get_overview(request: web.Request, context: ManagementContext) -> web.Response:
    user = current_user(request)
    names = visible_vhosts(context, user)
    vhosts = [context.broker.vhosts[name] for name in names]
    queues = [queue for vhost in vhosts for queue in vhost.queues.values()]
    connections = [
        protocol
        for protocol in context.open_connections()
        if user.is_monitor or protocol.session.username == user.name
    ]
    ready = sum(ready_messages(queue) for queue in queues)
    unacked = sum(queue.unacked for queue in queues)
    journal = context.server.journal
    # The release the version profile emulates, or WarrenMQ's own with --report-as warrenmq (as
    # server_properties reports them).
    session = context.server.config.session
    body = {
        "churn_rates": _counters(_CHURN),
        "cluster_name": context.cluster_name,
        "contexts": [
            {
                "description": "RabbitMQ Management",
                "ip": context.http_host,
                "node": context.node,
                "path": "/",
                "port": str(context.http_port or context.https_port),
                "ssl_opts": [],
            }
        ],
        "disable_stats": False,
        "enable_queue_totals": False,
        "erlang_full_version": f"Python {platform.python_version()}",
        "erlang_version": platform.python_version(),
        "exchange_types": EXCHANGE_TYPES,
        "listeners": overview_listeners(context),
        "management_version": session.product_version,
        "message_stats": _counters(_MESSAGE_STATS),
        "node": context.node,
        "object_totals": {
            "channels": sum(len(protocol.session.channels) for protocol in connections),
            "connections": len(connections) + len(context.open_amqp10_connections()),
            "consumers": sum(len(queue.consumers) for queue in queues),
            "exchanges": sum(len(vhost.exchanges) for vhost in vhosts),
            "queues": len(queues),
        },
        "product_name": session.product,
        "product_version": session.product_version,
        "queue_totals": {
            "messages": ready + unacked,
            "messages_details": dict(RATE),
            "messages_ready": ready,
            "messages_ready_details": dict(RATE),
            "messages_unacknowledged": unacked,
            "messages_unacknowledged_details": dict(RATE),
        },
        "rabbitmq_version": session.product_version,
        "rates_mode": "basic",
        "release_series_support_status": "supported",
        "sample_retention_policies": {
            "basic": [600, 3600],
            "detailed": [600],
            "global": [600, 3600, 28800, 86400],
        },
        "statistics_db_event_queue": 0,
        "warrenmq_version": __version__,
        # WarrenMQ's own: the event journal's settings and counters (drops included), null when off.
        "journal": journal.metrics() if journal is not None else None,
    }
    if context.broker.profile.management_4x:
        # Fields 4.0 added: the cluster's and node's tags (none configured), the default queue type, and
        # whether operator policies may change (rabbitmq.conf's default, true).
        body.update(cluster_tags={}, node_tags={}, default_queue_type="classic")
        body["is_op_policy_updating_enabled"] = True
    if context.server.ha is not None:  # the node's role in a high-availability pair (broker/ha)
        body.update(context.server.ha.fields())
    add_overview_stats(body, context, request)
    return reply(request, body)


async def get_whoami(request: web.Request, context: ManagementContext) -> web.Response:
    user = current_user(request)
    body: dict[str, Any] = {"name": user.name, "tags": list(user.tags)}
    if context.broker.profile.management_4x:
        body["is_internal_user"] = True  # every user is rabbit_auth_backend_internal's
    return reply(request, body)


async def get_cluster_name(request: web.Request, context: ManagementContext) -> web.Response:
    return reply(request, {"name": context.cluster_name})


async def put_cluster_name(request: web.Request, context: ManagementContext) -> web.Response:
    body = await body_json(request, ("name",))
    if not isinstance(body["name"], str) or not body["name"]:
        raise bad_request("cluster name must be a non-empty string")
    # rabbit_nodes:set_cluster_name keeps it as the cluster_name global parameter (stored, survives restart).
    context.cluster_name = body["name"]
    context.broker.set_global_parameter("cluster_name", body["name"])
    return no_content()


async def get_extensions(request: web.Request, context: ManagementContext) -> web.Response:
    # rabbit_mgmt_wm_extensions lists web_ui() of every rabbit_mgmt_extension module; with the management
    # plugin alone that is its own dispatcher (RabbitMQ 3.10 and 3.13 alike).
    return json_response([{"javascript": "dispatcher.js"}])


# The feature flags whose behaviour WarrenMQ has, named as RabbitMQ 3.13 names them, all enabled.
_FEATURE_FLAGS = [
    ("classic_queue_type_delivery_support", "Bug fix for classic queue deliveries using mixed versions"),
    ("direct_exchange_routing_v2", "v2 direct exchange routing implementation"),
    ("drop_unroutable_metric", "Count unroutable publishes to be dropped in stats"),
    ("empty_basic_get_metric", "Count AMQP `basic.get` on empty queues in stats"),
    (
        "implicit_default_bindings",
        "Default bindings are now implicit, instead of being stored in the database",
    ),
    ("maintenance_mode_status", "Maintenance mode status"),
    ("quorum_queue", "Support queues of type `quorum`"),
    ("stream_queue", "Support queues of type `stream`"),
    ("user_limits", "Configure connection and channel limits for a user"),
    ("virtual_host_metadata", "Virtual host metadata (description, tags, etc)"),
]


async def get_feature_flags(request: web.Request, context: ManagementContext) -> web.Response:
    rows = [
        {
            "desc": desc,
            "doc_url": "",
            "name": name,
            "provided_by": "rabbit",
            "stability": "stable",
            "state": "enabled",
        }
        for name, desc in _FEATURE_FLAGS
    ]
    return json_response(rows)


async def get_auth(request: web.Request, context: ManagementContext) -> web.Response:
    # No OAuth 2 in WarrenMQ: the management UI logs in with Basic credentials.
    return json_response(
        {"enable_uaa": False, "oauth_enabled": False, "uaa_client_id": "", "uaa_location": ""}
    )


ROUTES = [
    Route("GET", "/api/overview", get_overview),
    Route("GET", "/api/whoami", get_whoami),
    Route("GET", "/api/cluster-name", get_cluster_name),
    Route("PUT", "/api/cluster-name", put_cluster_name, Gate.ADMIN),
    Route("GET", "/api/extensions", get_extensions),
    Route("GET", "/api/feature-flags", get_feature_flags, Gate.ADMIN),
    Route("GET", "/api/auth", get_auth, Gate.PUBLIC),
]
