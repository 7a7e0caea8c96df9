"""The node's memory breakdown as RabbitMQ reports it (rabbit_vm:memory/0: GET /api/nodes/{node}?memory=true
and /api/nodes/{node}/memory, `rabbitmq-diagnostics memory_breakdown`, and rabbitmq_prometheus 4.1's
/metrics/memory-breakdown), measured on this process, never estimated from constants.

RabbitMQ sizes Erlang processes and ETS tables; WarrenMQ has neither, so each category is the nearest thing
Python can measure: ``binary`` the message bodies and content headers held by queues (ready, unacknowledged,
stream segments; a message routed to several queues counted once), ``queue_procs`` / ``quorum_queue_procs``
/ ``stream_queue_procs`` the queues' own containers and per-message records (``sys.getsizeof``),
``connection_readers`` the unparsed input buffers, ``connection_writers`` the output not yet written to the
socket, ``connection_channels`` the channels' unacknowledged-delivery tables, ``mnesia`` the definition
tables (vhosts, exchanges, bindings, users, permissions, policies), ``metrics`` / ``mgmt_db`` the counters
and the sampler's rate history, ``code`` the bytecode (.pyc) of the loaded modules. Categories with nothing
behind them in WarrenMQ (atoms, plugins' processes, quorum ETS tables, the message-store index of an
in-memory node) are 0. Strategy "rss" as RabbitMQ's default: ``total.rss`` is the resident set (psutil),
``total.allocated`` its private part (rss - shared), ``other_system`` what is allocated but not in a
category above, ``reserved_unallocated`` the shared remainder, so the categories add up to ``total.rss``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from broker.management.stats import live

if TYPE_CHECKING:
    from broker.core.model.message import Message
    from broker.management.context import ManagementContext

# rabbit_vm:memory/0's keys, in its order (RabbitMQ 3.10-3.13).
KEYS = (
    "connection_readers",
    "connection_writers",
    "connection_channels",
    "connection_other",
    "queue_procs",
    "queue_slave_procs",
    "quorum_queue_procs",
    "quorum_queue_dlx_procs",
    "stream_queue_procs",
    "stream_queue_replica_reader_procs",
    "stream_queue_coordinator_procs",
    "plugins",
    "other_proc",
    "metrics",
    "mgmt_db",
    "mnesia",
    "quorum_ets",
    "other_ets",
    "binary",
    "msg_index",
    "code",
    "atom",
    "other_system",
    "allocated_unused",
    "reserved_unallocated",
)
_QUEUE_KEYS = {"classic": "queue_procs", "quorum": "quorum_queue_procs", "stream": "stream_queue_procs"}


def breakdown(context: ManagementContext) -> dict[str, Any]:
    """The ``memory`` object of /api/nodes/{node}?memory=true, in bytes."""
    sizes = dict.fromkeys(KEYS, 0)
    seen: set[int] = set()
    broker = context.broker
    for vhost in broker.vhosts.values():
        for queue in vhost.queues.values():
            settings = queue.features.settings if queue.features is not None else None
            key = _QUEUE_KEYS.get(settings.queue_type if settings is not None else "classic", "queue_procs")
            envelopes = getattr(queue, "ready", ())
            fresh = getattr(queue, "fresh", ())  # copies never delivered, held without an envelope
            sizes[key] += sys.getsizeof(queue) + sys.getsizeof(envelopes) + sys.getsizeof(fresh)
            sizes[key] += sum(sys.getsizeof(envelope) for envelope in envelopes)
            sizes["binary"] += _bytes((envelope.message for envelope in envelopes), seen)
            sizes["binary"] += _bytes(fresh, seen)
            log = getattr(queue.features, "log", None)
            for segment in getattr(log, "segments", ()):
                sizes[key] += sys.getsizeof(segment.messages) + sys.getsizeof(segment.timestamps_ms)
                sizes["binary"] += _bytes(segment.messages, seen)
        sizes["mnesia"] += _containers(vhost.exchanges, vhost.queues, vhost.bindings)
    for protocol in context.open_connections():
        session = protocol.session
        sizes["connection_readers"] += sys.getsizeof(getattr(session.frames, "_buf", b""))
        transport = protocol.transport
        pending = transport.get_write_buffer_size() if transport is not None else 0
        sizes["connection_writers"] += pending + sum(len(chunk) for chunk in getattr(protocol, "_out", ()))
        sizes["connection_other"] += sys.getsizeof(session) + sys.getsizeof(session.client_properties)
        for _, channel in live.channels(protocol):
            deliveries = list(channel.unacked.outstanding())
            sizes["connection_channels"] += sys.getsizeof(channel) + sys.getsizeof(channel.unacked._entries)
            sizes["binary"] += _bytes((delivery.envelope.message for delivery in deliveries), seen)
    access = broker.access
    sizes["mnesia"] += _containers(
        broker.vhosts, access.users, access.permissions, access.topic_permissions, broker.vhost_metadata
    )
    sizes["mnesia"] += _containers(
        *broker.policies.policies.values(), *broker.policies.operator_policies.values()
    )
    sizes["metrics"] += sum(
        sys.getsizeof(queue.stats) for vhost in broker.vhosts.values() for queue in vhost.queues.values()
    )
    sampler = getattr(context, "sampler", None)
    sizes["mgmt_db"] += _deep_containers(getattr(sampler, "__dict__", {}))
    sizes["code"] = _code_bytes()
    # psutil only when a breakdown is asked for: the management app imports this module at start-up.
    import psutil

    memory = psutil.Process().memory_info()
    rss = int(memory.rss)
    allocated = max(0, rss - int(getattr(memory, "shared", 0)))
    measured = sum(sizes.values())
    sizes["other_system"] = max(0, allocated - measured)
    sizes["reserved_unallocated"] = max(0, rss - max(allocated, measured))
    return {**sizes, "strategy": "rss", "total": {"erlang": allocated, "rss": rss, "allocated": allocated}}


def _bytes(messages: Iterable[Message], seen: set[int]) -> int:
    total = 0
    for message in messages:
        if id(message) not in seen:
            seen.add(id(message))
            total += len(message.body) + len(message.header_payload)
    return total


def _containers(*containers: Any) -> int:
    return sum(sys.getsizeof(container) for container in containers)


def _deep_containers(attributes: dict[str, Any]) -> int:
    """The sampler's attributes and, one level down, the containers they hold (its rate history)."""
    total = 0
    for value in attributes.values():
        total += sys.getsizeof(value)
        if isinstance(value, dict):
            total += sum(sys.getsizeof(item) for item in value.values())
    return total


def _code_bytes() -> int:
    """The size of the compiled bytecode of every loaded Python module (its .pyc; extension modules are
    shared libraries, mapped rather than allocated, so part of ``reserved_unallocated``)."""
    total = 0
    for path in _module_files():
        try:
            total += os.path.getsize(path)
        except OSError:
            continue
    return total


def _module_files() -> Iterator[str]:
    for module in list(sys.modules.values()):
        path = getattr(module, "__cached__", None)
        if isinstance(path, str) and path.endswith(".pyc"):
            yield path


# /metrics/memory-breakdown (rabbitmq_prometheus 4.1+, the node_memory table): metric name, help text and the
# rabbit_vm:memory/0 key it reads. RabbitMQ 3.x and 4.0 have no such registry.
MEMORY_BREAKDOWN: tuple[tuple[str, str, str], ...] = (
    ("memory_code_module_bytes", "Code module memory footprint", "code"),
    (
        "memory_client_connection_reader_bytes",
        "Client connection reader processes footprint in bytes",
        "connection_readers",
    ),
    (
        "memory_client_connection_writer_bytes",
        "Client connection writer processes footprint in bytes",
        "connection_writers",
    ),
    (
        "memory_client_connection_channel_bytes",
        "Client connection channel processes footprint in bytes",
        "connection_channels",
    ),
    (
        "memory_client_connection_other_bytes",
        "Client connection other processes footprint in bytes",
        "connection_other",
    ),
    (
        "memory_classic_queue_erlang_process_bytes",
        "Classic queue processes footprint in bytes",
        "queue_procs",
    ),
    (
        "memory_quorum_queue_erlang_process_bytes",
        "Quorum queue processes footprint in bytes",
        "quorum_queue_procs",
    ),
    (
        "memory_quorum_queue_dlx_erlang_process_bytes",
        "Quorum queue DLX worker processes footprint in bytes",
        "quorum_queue_dlx_procs",
    ),
    ("memory_stream_erlang_process_bytes", "Stream processes footprint in bytes", "stream_queue_procs"),
    (
        "memory_stream_replica_reader_erlang_process_bytes",
        "Stream replica reader processes footprint in bytes",
        "stream_queue_replica_reader_procs",
    ),
    (
        "memory_stream_coordinator_erlang_process_bytes",
        "Stream coordinator processes footprint in bytes",
        "stream_queue_coordinator_procs",
    ),
    ("memory_plugin_bytes", "Total plugin footprint in bytes", "plugins"),
    ("memory_modern_metadata_store_bytes", "Modern metadata store footprint in bytes", "metadata_store"),
    ("memory_other_erlang_process_bytes", "Other processes footprint in bytes", "other_proc"),
    ("memory_metrics_bytes", "Metric table footprint in bytes", "metrics"),
    ("memory_management_stats_db_bytes", "Management stats database footprint in bytes", "mgmt_db"),
    ("memory_classic_metadata_store_bytes", "Classic metadata store footprint in bytes", "mnesia"),
    ("memory_quorum_queue_ets_table_bytes", "Quorum queue ETS tables footprint in bytes", "quorum_ets"),
    (
        "memory_modern_metadata_store_ets_table_bytes",
        "Modern metadata store ETS tables footprint in bytes",
        "metadata_store_ets",
    ),
    ("memory_other_ets_table_bytes", "Other ETS tables footprint in bytes", "other_ets"),
    ("memory_binary_heap_bytes", "Binary heap size in bytes", "binary"),
    ("memory_message_index_bytes", "Message index footprint in bytes", "msg_index"),
    ("memory_atom_table_bytes", "Atom table size in bytes", "atom"),
    ("memory_other_system_bytes", "Other runtime footprint in bytes", "other_system"),
    (
        "memory_runtime_allocated_unused_bytes",
        "Runtime allocated but unused blocks size in bytes",
        "allocated_unused",
    ),
    (
        "memory_runtime_reserved_unallocated_bytes",
        "Runtime reserved but unallocated blocks size in bytes",
        "reserved_unallocated",
    ),
)
