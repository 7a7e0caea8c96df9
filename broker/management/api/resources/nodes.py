"""GET /api/nodes and /api/nodes/{node}: the one WarrenMQ node, with the host's real memory, disk, file
descriptor and process figures where the OS gives them."""

from __future__ import annotations

import os
import resource
import shutil
from typing import Any

from aiohttp import web

from broker import __version__
from broker.management.api.auth import Gate
from broker.management.api.paging import reply
from broker.management.api.resources.overview import EXCHANGE_TYPES
from broker.management.api.routing import Route
from broker.management.context import ManagementContext
from broker.management.errors import json_response, not_found
from broker.management.metrics.memory_breakdown import breakdown
from broker.management.stats.node_io import persister_counts
from broker.management.views.serialize import RATE

_COUNTERS = [
    "channel_closed",
    "channel_created",
    "connection_closed",
    "connection_created",
    "context_switches",
    "gc_bytes_reclaimed",
    "gc_num",
    "io_read_avg_time",
    "io_read_bytes",
    "io_read_count",
    "io_reopen_count",
    "io_seek_avg_time",
    "io_seek_count",
    "io_sync_avg_time",
    "io_sync_count",
    "io_write_avg_time",
    "io_write_bytes",
    "io_write_count",
    "mnesia_disk_tx_count",
    "mnesia_ram_tx_count",
    "msg_store_read_count",
    "msg_store_write_count",
    "queue_created",
    "queue_declared",
    "queue_deleted",
    "queue_index_read_count",
    "queue_index_write_count",
]

# RabbitMQ 3.10's metrics_gc_queue_length keys (rabbit_mgmt_wm_nodes via rabbit_core_metrics_gc).
_METRICS_GC_TABLES = (
    "channel_closed",
    "channel_consumer_deleted",
    "connection_closed",
    "consumer_deleted",
    "exchange_deleted",
    "node_node_deleted",
    "queue_deleted",
    "vhost_deleted",
)


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _fd_used() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def node_json(context: ManagementContext) -> dict[str, Any]:
    data_dir = str(getattr(context.server.config, "data_dir", "") or os.getcwd())
    try:
        disk_free = shutil.disk_usage(data_dir if os.path.isdir(data_dir) else os.getcwd()).free
    except OSError:
        disk_free = 0
    alarms = context.server.alarms  # broker.server.alarms: the limits in force and the alarms in effect
    body: dict[str, Any] = {}
    # The store's and spill files' I/O and the churn record where WarrenMQ has them; the Erlang VM's own
    # (context switches, garbage collection, seeks, reopens, RAM transactions) stay 0.
    counts = persister_counts(context.server)
    for name in _COUNTERS:
        body[name] = counts.get(name, 0)
        body[f"{name}_details"] = dict(RATE)
    fd_total = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    body.update(
        {
            # RabbitMQ lists its "rabbit" application with the release; here the release reported.
            "applications": [
                {
                    "description": context.server.config.session.product,
                    "name": "rabbit",
                    "version": context.server.config.session.product_version,
                },
                {"description": "WarrenMQ AMQP 0-9-1 broker", "name": "warrenmq", "version": __version__},
            ],
            "auth_mechanisms": [
                {"description": "SASL PLAIN authentication mechanism", "enabled": True, "name": "PLAIN"},
                {"description": "QPid AMQPLAIN mechanism", "enabled": True, "name": "AMQPLAIN"},
            ],
            "cluster_links": [],
            "config_files": [],
            "contexts": [{"description": "RabbitMQ Management", "path": "/", "port": str(context.http_port)}],
            "db_dir": data_dir,
            "disk_free": disk_free,
            "disk_free_alarm": alarms.disk_alarm,
            "disk_free_details": dict(RATE),
            "disk_free_limit": alarms.disk_free_limit,
            "enabled_plugins": ["rabbitmq_management"],
            "exchange_types": EXCHANGE_TYPES,
            "fd_total": fd_total if fd_total > 0 else 0,
            "fd_used": _fd_used(),
            "fd_used_details": dict(RATE),
            "log_files": [],
            "mem_alarm": alarms.mem_alarm,
            "mem_calculation_strategy": "rss",
            "mem_limit": alarms.mem_limit,
            "mem_used": _rss_bytes(),
            "mem_used_details": dict(RATE),
            # rabbit_core_metrics_gc's pending deletions per table: none, WarrenMQ drops an object's
            # statistics with the object.
            "metrics_gc_queue_length": dict.fromkeys(_METRICS_GC_TABLES, 0),
            "name": context.node,
            "net_ticktime": 60,
            "os_pid": context.os_pid,
            "partitions": [],
            "proc_total": 1_048_576,
            "proc_used": len(context.server.connections) + 1,
            "proc_used_details": dict(RATE),
            "processors": os.cpu_count() or 1,
            # Files Ra's WAL and segment writer hold open: WarrenMQ's quorum queues have no Ra log.
            "ra_open_file_metrics": {"ra_log_segment_writer": 0, "ra_log_wal": 0},
            "rates_mode": "basic",
            "run_queue": 0,
            "running": True,
            "sockets_total": fd_total if fd_total > 0 else 0,
            "sockets_used": len(context.server.connections),
            "sockets_used_details": dict(RATE),
            "type": "disc",
            "uptime": context.uptime_ms(),
        }
    )
    if context.broker.profile.management_4x:
        body["being_drained"] = False  # 4.0's maintenance mode: never entered here
    if context.server.ha is not None:
        body.update(context.server.ha.fields())
    return body


async def get_nodes(request: web.Request, context: ManagementContext) -> web.Response:
    return json_response([node_json(context)])


async def get_node(request: web.Request, context: ManagementContext) -> web.Response:
    if request.match_info["node"] != context.node:
        raise not_found()
    body = node_json(context)
    if request.query.get("memory") == "true":  # rabbit_mgmt_wm_node: the breakdown on demand
        body["memory"] = breakdown(context)
    return reply(request, body)


async def get_node_memory(request: web.Request, context: ManagementContext) -> web.Response:
    if request.match_info["node"] != context.node:
        raise not_found()
    return json_response({"memory": breakdown(context)})


ROUTES = [
    Route("GET", "/api/nodes", get_nodes, Gate.MONITOR),
    Route("GET", "/api/nodes/{node}", get_node, Gate.MONITOR),
    Route("GET", "/api/nodes/{node}/memory", get_node_memory, Gate.MONITOR),
]
