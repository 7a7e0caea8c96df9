"""rabbitmq_prometheus's samples read from the broker at scrape time: per object (queue, channel, connection,
exchange, vhost) with RabbitMQ's labels, the node's process figures (psutil), and the global counters.

Nothing is kept between scrapes; the hot path's counters (broker.core.model.stats) are read as they are.
"""

from __future__ import annotations

import gc
import resource
import shutil
import sys
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import psutil

from broker.management.metrics.prometheus_amqp10 import amqp10_samples, amqp10_share
from broker.management.metrics.prometheus_catalogue import DETAILED
from broker.management.stats import live
from broker.management.views.serialize import queue_counts, queue_type

if TYPE_CHECKING:
    from broker.config import ServerConfig
    from broker.management.context import ManagementContext

Labels = dict[str, str]
Samples = dict[str, list[tuple[Labels, float]]]

# Labels naming one object: dropped, and the values summed, in the aggregated /metrics.
OBJECT_LABELS = frozenset({"vhost", "queue", "channel", "exchange", "queue_vhost", "exchange_vhost"})
# rabbitmq_global_* counters are per queue type (rabbit_global_counters).
QUEUE_TYPES = {
    "classic": "rabbit_classic_queue",
    "quorum": "rabbit_quorum_queue",
    "stream": "rabbit_stream_queue",
}
AMQP = {"protocol": "amqp091"}


# Every per-queue family of rabbitmq_prometheus's queue groups, in catalogue order; the head message
# timestamp is set apart (NaN: message properties are not decoded at scrape time).
QUEUE_FAMILIES = tuple(
    name
    for group in ("queue_coarse_metrics", "queue_consumer_count", "queue_metrics")
    for name in DETAILED[group]
    if name != "queue_head_message_timestamp"
)
# The API's queue figures (serialize.queue_counts, read from the queue's counters) behind each family.
_COUNT_KEYS = {
    "queue_messages_ready": "messages_ready",
    "queue_messages_unacked": "messages_unacknowledged",
    "queue_messages": "messages",
    "queue_process_memory_bytes": "memory",
    "queue_messages_ram": "messages_ram",
    "queue_messages_ram_bytes": "message_bytes_ram",
    "queue_messages_ready_ram": "messages_ready_ram",
    "queue_messages_unacked_ram": "messages_unacknowledged_ram",
    "queue_messages_persistent": "messages_persistent",
    "queue_messages_persistent_bytes": "message_bytes_persistent",
    "queue_messages_bytes": "message_bytes",
    "queue_messages_ready_bytes": "message_bytes_ready",
    "queue_messages_unacked_bytes": "message_bytes_unacknowledged",
    "queue_messages_paged_out": "messages_paged_out",
    "queue_messages_paged_out_bytes": "message_bytes_paged_out",
}


def _queue_values(queue: Any) -> tuple[float, ...]:
    """One queue's values of ``QUEUE_FAMILIES``, in that order."""
    counts = queue_counts(queue)
    busy = 1.0 if queue.consumers else 0.0
    fixed = {
        "queue_consumers": float(len(queue.consumers)),
        "queue_consumer_capacity": busy,
        "queue_consumer_utilisation": busy,
    }
    return tuple(
        float(counts[_COUNT_KEYS[name]]) if name in _COUNT_KEYS else fixed.get(name, 0.0)
        for name in QUEUE_FAMILIES
    )


def queue_samples(context: ManagementContext, out: Samples, vhost_filter: str | None = None) -> None:
    for vhost in context.broker.vhosts.values():
        if vhost_filter is not None and vhost.name != vhost_filter:
            continue
        for queue in vhost.queues.values():
            labels = {"vhost": vhost.name, "queue": queue.name}
            for name, value in zip(QUEUE_FAMILIES, _queue_values(queue), strict=True):
                out[name].append((labels, value))
            # Message timestamps are not read (properties stay raw): NaN, RabbitMQ's value without one.
            out["queue_head_message_timestamp"].append((labels, float("nan")))
            # Publishes are counted per queue, not per (channel, exchange, queue): those labels stay empty.
            published = {"channel": "", "queue_vhost": vhost.name, "queue": queue.name}
            published |= {"exchange_vhost": "", "exchange": ""}
            out["queue_messages_published_total"].append((published, float(queue.stats.publish)))


def queue_sums(context: ManagementContext, out: Samples) -> None:
    """What ``aggregate`` makes of ``queue_samples`` (every queue label is an object label, so each family
    sums to one unlabelled row), summed directly: 100,000 queues made 2.4 million rows per scrape, and the
    aggregated /metrics held the event loop for 4-10 s."""
    totals = [0.0] * len(QUEUE_FAMILIES)
    published = 0.0
    count = 0
    for vhost in context.broker.vhosts.values():
        for queue in vhost.queues.values():
            count += 1
            totals = [a + b for a, b in zip(totals, _queue_values(queue), strict=True)]
            published += float(queue.stats.publish)
    if not count:
        return
    for name, total in zip(QUEUE_FAMILIES, totals, strict=True):
        out[name].append(({}, total))
    out["queue_head_message_timestamp"].append(({}, float("nan")))
    out["queue_messages_published_total"].append(({}, published))


def channel_samples(context: ManagementContext, out: Samples, vhost_filter: str | None = None) -> None:
    for protocol in context.open_connections():
        vhost = live.connection_vhost(protocol)
        if vhost_filter is not None and vhost != vhost_filter:
            continue
        connection = {"channel": str(protocol.name)}  # rabbitmq_prometheus 3.10 labels connections "channel"
        channels = live.channels(protocol)
        for name, value in (
            ("connection_incoming_bytes_total", protocol.recv_oct),
            ("connection_outgoing_bytes_total", protocol.send_oct),
            ("connection_process_reductions_total", 0),
            ("connection_incoming_packets_total", protocol.recv_cnt),
            ("connection_outgoing_packets_total", protocol.send_cnt),
            ("connection_pending_packets", 0),
            ("connection_channels", len(channels)),
        ):
            out[name].append((connection, float(value)))
        for number, channel in channels:
            _channel(out, live.channel_name(protocol, number), vhost, channel)


def _channel(out: Samples, name: str, vhost: str, channel: Any) -> None:
    labels = {"channel": name}
    stats = channel.stats
    tx = channel.tx
    for metric, value in (
        ("channel_consumers", len(channel.consumers)),
        ("channel_messages_unacked", live.channel_unacked(channel)),
        (
            "channel_messages_unconfirmed",
            channel.publish_seq - channel.confirmed_seq - len(channel.confirms_settled)
            if channel.confirm
            else 0,
        ),
        ("channel_messages_uncommitted", len(tx.publishes) if tx is not None else 0),
        ("channel_acks_uncommitted", len(tx.settlements) if tx is not None else 0),
        ("consumer_prefetch", channel.prefetch_count),
        ("channel_prefetch", channel.global_prefetch),
        ("channel_process_reductions_total", 0),
    ):
        out[metric].append((labels, float(value)))
    # Counted per channel, not per (channel, exchange) or (channel, queue): those labels stay empty.
    exchange = {"channel": name, "vhost": vhost, "exchange": ""}
    for metric, value in (
        ("channel_messages_published_total", stats.publish),
        ("channel_messages_confirmed_total", stats.confirm),
        ("channel_messages_unroutable_returned_total", stats.return_unroutable),
        ("channel_messages_unroutable_dropped_total", stats.drop_unroutable),
    ):
        out[metric].append((exchange, float(value)))
    queue = {"channel": name, "vhost": vhost, "queue": ""}
    for metric, value in (
        ("channel_get_ack_total", stats.get),
        ("channel_get_total", stats.get_no_ack),
        ("channel_messages_delivered_ack_total", stats.deliver),
        ("channel_messages_delivered_total", stats.deliver_no_ack),
        ("channel_messages_redelivered_total", stats.redeliver),
        ("channel_messages_acked_total", stats.ack),
        ("channel_get_empty_total", stats.get_empty),
    ):
        out[metric].append((queue, float(value)))


def cluster_samples(context: ManagementContext, out: Samples, vhost_filter: str | None = None) -> None:
    for vhost in context.broker.vhosts.values():
        if vhost_filter is not None and vhost.name != vhost_filter:
            continue
        out["cluster_vhost_status"].append(({"vhost": vhost.name}, 1.0))
        bindings: dict[str, int] = defaultdict(int)
        for binding in vhost.bindings:
            bindings[binding.source.name] += 1
        for exchange in vhost.exchanges.values():
            if not exchange.name:
                continue
            labels = {"vhost": vhost.name, "exchange": exchange.name, "type": exchange.type_name}
            out["cluster_exchange_name"].append((labels, 1.0))
            out["cluster_exchange_bindings"].append((labels, float(bindings[exchange.name])))


def node_samples(context: ManagementContext, out: Samples, per_object: bool = False) -> None:
    config: ServerConfig = context.server.config
    process = psutil.Process()
    rss = float(process.memory_info().rss)
    open_fds = float(process.num_fds())
    max_fds = float(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    disk_free = float(shutil.disk_usage(config.data_dir or ".").free)
    # The alarm monitor's own limits and states (broker.server.alarms: the cgroup's limit counts; an
    # in-memory broker watches no disk), so the gauges agree with /api/nodes and connection.blocked.
    alarms = context.server.alarms
    memory_limit = float(alarms.mem_limit)
    disk_limit = float(alarms.disk_free_limit)
    switches = process.num_ctx_switches()
    io = process.io_counters() if hasattr(process, "io_counters") else None
    connections = len(context.open_connections())
    values: dict[str, float] = {
        # Alarms as rabbit_alarm raises them: memory above its watermark, free disk below its limit,
        # file descriptors exhausted.
        "alarms_file_descriptor_limit": float(open_fds >= max_fds),
        "alarms_free_disk_space_watermark": float(alarms.disk_alarm),
        "alarms_memory_used_watermark": float(alarms.mem_alarm),
        "process_open_fds": open_fds,
        "process_open_tcp_sockets": float(connections),
        "process_resident_memory_bytes": rss,
        "disk_space_available_bytes": disk_free,
        # The Erlang VM's figures, with Python's nearest equivalents.
        "erlang_processes_used": float(len(process.threads())),
        "erlang_gc_runs_total": float(sum(generation["collections"] for generation in gc.get_stats())),
        "erlang_gc_reclaimed_bytes_total": 0.0,
        "erlang_scheduler_context_switches_total": float(switches.voluntary + switches.involuntary),
        "process_max_fds": max_fds,
        # RabbitMQ reserves part of the descriptors for files: its socket limit is about 90% of them.
        "process_max_tcp_sockets": float(int(max_fds * 0.9)),
        "resident_memory_limit_bytes": memory_limit,
        "disk_space_available_limit_bytes": disk_limit,
        "erlang_processes_limit": float(sys.maxsize),
        "erlang_scheduler_run_queue": 0.0,
        "erlang_net_ticktime_seconds": 60.0,
        "erlang_uptime_seconds": context.uptime_ms() / 1000.0,
        "io_read_ops_total": float(io.read_count) if io else 0.0,
        "io_read_bytes_total": float(io.read_bytes) if io else 0.0,
        "io_write_ops_total": float(io.write_count) if io else 0.0,
        "io_write_bytes_total": float(io.write_bytes) if io else 0.0,
    }
    # The rest of node_persister_metrics (fsyncs, seeks, Mnesia transactions, message store and queue index
    # operations, I/O times) counts what WarrenMQ's store does not do or does not time: zero, as the catalogue
    # lists them.
    for name in DETAILED["node_persister_metrics"]:
        values.setdefault(name, 0.0)
    for name, value in values.items():
        if not (per_object and name.startswith("alarms_")):  # alarms are in the aggregated /metrics only
            out[name].append(({}, value))


def churn_samples(context: ManagementContext, out: Samples) -> None:
    churn = context.broker.churn
    for name, value in (
        ("connections_opened_total", churn.connection_created),
        ("connections_closed_total", churn.connection_closed),
        ("channels_opened_total", churn.channel_created),
        ("channels_closed_total", churn.channel_closed),
        ("queues_declared_total", churn.queue_declared),
        ("queues_created_total", churn.queue_created),
        ("queues_deleted_total", churn.queue_deleted),
    ):
        out[name].append(({}, float(value)))


def global_samples(context: ManagementContext, out: Samples) -> None:
    """rabbit_global_counters: publishes of every channel (closed ones too), deliveries per queue type."""
    broker = context.broker
    received = confirm = returned = dropped = confirmed = 0
    consumers = publishers = 0
    for vhost in broker.vhosts.values():
        totals = vhost.channel_totals
        received += totals.publish
        returned += totals.return_unroutable
        dropped += totals.drop_unroutable
        confirmed += totals.confirm
        confirm += totals.publish_confirm
    for protocol in context.open_connections():
        for _, channel in live.channels(protocol):
            if channel.closing:
                continue
            stats = channel.stats
            received += stats.publish
            returned += stats.return_unroutable
            dropped += stats.drop_unroutable
            confirmed += stats.confirm
            confirm += channel.publish_seq
            consumers += len(channel.consumers)
            publishers += stats.publish > 0
    per_type: dict[str, dict[str, int]] = {kind: defaultdict(int) for kind in QUEUE_TYPES.values()}
    for vhost in broker.vhosts.values():
        for queue in vhost.queues.values():
            counts = per_type[QUEUE_TYPES[queue_type(queue)]]
            for field in ("deliver", "deliver_no_ack", "get", "get_no_ack", "get_empty", "ack", "redeliver"):
                counts[field] += getattr(queue.stats, field)
    amqp10 = broker.amqp10_counters if broker.profile.amqp10 else None
    if amqp10 is not None:  # the queues' counters hold 1.0 deliveries too: they go in the amqp10 rows
        for kind, counter_name in QUEUE_TYPES.items():
            for field, value in amqp10_share(amqp10, kind).items():
                per_type[counter_name][field] -= value
    out["global_consumers"].append((AMQP, float(consumers)))
    out["global_publishers"].append((AMQP, float(publishers)))
    for name, value in (
        ("global_messages_received_total", received),
        ("global_messages_received_confirm_total", confirm),
        ("global_messages_routed_total", received - returned - dropped),
        ("global_messages_unroutable_dropped_total", dropped),
        ("global_messages_unroutable_returned_total", returned),
        ("global_messages_confirmed_total", confirmed),
    ):
        out[name].append((AMQP, float(value)))
    _dead_lettered(context, out)
    for kind, counts in per_type.items():
        labels = {"protocol": "amqp091", "queue_type": kind}
        delivered = counts["deliver"] + counts["deliver_no_ack"] + counts["get"] + counts["get_no_ack"]
        for name, value in (
            ("global_messages_acknowledged_total", counts["ack"]),
            ("global_messages_delivered_consume_auto_ack_total", counts["deliver_no_ack"]),
            ("global_messages_delivered_consume_manual_ack_total", counts["deliver"]),
            ("global_messages_delivered_get_auto_ack_total", counts["get_no_ack"]),
            ("global_messages_delivered_get_manual_ack_total", counts["get"]),
            ("global_messages_delivered_total", delivered),
            ("global_messages_get_empty_total", counts["get_empty"]),
            ("global_messages_redelivered_total", counts["redeliver"]),
        ):
            out[name].append((labels, float(value)))
    if amqp10 is not None:
        amqp10_samples(amqp10, context.open_amqp10_connections(), QUEUE_TYPES, out)


def auth_attempt_samples(context: ManagementContext, out: Samples) -> None:
    """rabbit_core_metrics' auth attempts per protocol that has seen a login (amqp091, amqp10, http)."""
    for row in context.broker.auth_attempts.rows():
        labels = {"protocol": str(row["protocol"])}
        out["auth_attempts_total"].append((labels, float(row["auth_attempts"])))
        out["auth_attempts_succeeded_total"].append((labels, float(row["auth_attempts_succeeded"])))
        out["auth_attempts_failed_total"].append((labels, float(row["auth_attempts_failed"])))


def totals_samples(context: ManagementContext, out: Samples) -> None:
    connections = context.open_connections()
    queues = [queue for vhost in context.broker.vhosts.values() for queue in vhost.queues.values()]
    amqp10 = context.open_amqp10_connections()  # connections on 4.0.5 too; their sessions are no channels
    for name, value in (
        ("connections", len(connections) + len(amqp10)),
        ("channels", sum(len(live.channels(protocol)) for protocol in connections)),
        ("consumers", sum(len(queue.consumers) for queue in queues)),
        ("queues", len(queues)),
    ):
        out[name].append(({}, float(value)))


def aggregate(samples: Samples) -> Samples:
    """rabbitmq_prometheus's default /metrics: per-object samples summed over their object labels."""
    out: Samples = {}
    for name, rows in samples.items():
        sums: dict[tuple[tuple[str, str], ...], float] = {}
        for labels, value in rows:
            key = tuple((k, v) for k, v in labels.items() if k not in OBJECT_LABELS)
            sums[key] = sums.get(key, 0.0) + value
        out[name] = [(dict(key), value) for key, value in sums.items()]
    return out


# The (queue type, strategy) series rabbit_global_counters declares for each dead-lettering reason (3.10).
_CLASSIC, _QUORUM = "rabbit_classic_queue", "rabbit_quorum_queue"
_ALL_QUORUM = [(_QUORUM, "at_least_once"), (_QUORUM, "at_most_once"), (_QUORUM, "disabled")]
_DEAD_LETTER_SERIES = {
    "confirmed": [(_QUORUM, "at_least_once")],
    "delivery_limit": _ALL_QUORUM,
    "expired": [(_CLASSIC, "at_most_once"), (_CLASSIC, "disabled"), *_ALL_QUORUM],
    "maxlen": [
        (_CLASSIC, "at_most_once"),
        (_CLASSIC, "disabled"),
        (_QUORUM, "at_most_once"),
        (_QUORUM, "disabled"),
    ],
    "rejected": [(_CLASSIC, "at_most_once"), (_CLASSIC, "disabled"), *_ALL_QUORUM],
}


def _dead_lettered(context: ManagementContext, out: Samples) -> None:
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for vhost in context.broker.vhosts.values():
        for (reason, kind, strategy), count in vhost.dead_lettered.items():
            counts[(reason, QUEUE_TYPES.get(kind, _CLASSIC), strategy)] += count
    for reason, series in _DEAD_LETTER_SERIES.items():
        for kind, strategy in series:
            labels = {"queue_type": kind, "dead_letter_strategy": strategy}
            value = counts[(reason, kind, strategy)]
            out[f"global_messages_dead_lettered_{reason}_total"].append((labels, float(value)))
