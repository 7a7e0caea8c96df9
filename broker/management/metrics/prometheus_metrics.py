"""The metric families rabbitmq_prometheus serves, built with prometheus-client from what the broker holds at
scrape time, and their text exposition. Imported at the first scrape
(broker.management.metrics.prometheus_app), so that prometheus-client and psutil are not part of the broker's
start-up."""

from __future__ import annotations

import platform
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import version

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    UnknownMetricFamily,
)

from broker.management.context import ManagementContext
from broker.management.metrics import prometheus_collect as collect
from broker.management.metrics.memory_breakdown import MEMORY_BREAKDOWN, breakdown
from broker.management.metrics.prometheus_catalogue import DETAILED, FAMILIES, HELP, TYPES

PREFIX = "rabbitmq_"
_KINDS: dict[str, Callable[..., CounterMetricFamily | GaugeMetricFamily | UnknownMetricFamily]] = {
    "counter": CounterMetricFamily,
    "gauge": GaugeMetricFamily,
    "untyped": UnknownMetricFamily,
}


def _family(full_name: str, short: str, rows: list[tuple[dict[str, str], float]]) -> Metric:
    keys = list(rows[0][0]) if rows else []
    metric = _KINDS[TYPES[short]](full_name, HELP[short], labels=keys)
    for labels, value in rows:
        metric.add_metric([labels.get(key, "") for key in keys], value)
    return metric


def _info(context: ManagementContext) -> list[Metric]:
    """rabbitmq_build_info and rabbitmq_identity_info, on every endpoint."""
    profile = context.server.config.profile
    build = {
        "rabbitmq_version": profile.rabbitmq_version,
        "prometheus_plugin_version": profile.rabbitmq_version,
        "prometheus_client_version": version("prometheus-client"),
        "erlang_version": platform.python_version(),
    }
    identity = {
        "rabbitmq_node": context.node,
        "rabbitmq_cluster": context.cluster_name,
        "rabbitmq_cluster_permanent_id": f"rabbitmq-cluster-id-{context.cluster_name}",
    }
    return [
        _family("rabbitmq_build_info", "build_info", [(build, 1.0)]),
        _family("rabbitmq_identity_info", "identity_info", [(identity, 1.0)]),
    ]


def _warrenmq(context: ManagementContext) -> list[Metric]:
    """WarrenMQ's own families (no rabbitmq_ prefix: RabbitMQ has no such thing): the store's commit
    latency, and a high-availability node's role, epoch and failovers (broker/ha)."""
    metrics: list[Metric] = []
    writer = context.server.writer
    if writer is not None:
        times = writer.commit_times
        histogram = HistogramMetricFamily(
            "warrenmq_store_commit_seconds",
            "Time the durable store took to commit one group of writes (a persistent message's confirm "
            "waits for one)",
            buckets=times.cumulative(),
            sum_value=times.seconds,
        )
        metrics.append(histogram)
    ha = context.server.ha
    if ha is not None:
        role = GaugeMetricFamily(
            "warrenmq_ha_role", "1 for this node's role in a high-availability pair", labels=["role"]
        )
        for name in ("active", "standby"):
            role.add_metric([name], 1.0 if ha.role.value == name else 0.0)
        metrics.append(role)
        metrics.append(
            GaugeMetricFamily(
                "warrenmq_ha_epoch", "The epoch this node was elected with (0 while standby)", ha.epoch or 0
            )
        )
        metrics.append(
            CounterMetricFamily(
                "warrenmq_ha_failovers",
                "Elections after the first on this store, as known to this node (its epoch - 1)",
                ha.failovers,
            )
        )
    return metrics


def _all_samples(context: ManagementContext, per_object: bool) -> collect.Samples:
    samples: collect.Samples = defaultdict(list)
    collect.node_samples(context, samples, per_object)
    collect.churn_samples(context, samples)
    if per_object:
        collect.queue_samples(context, samples)
    else:
        collect.queue_sums(context, samples)
    collect.channel_samples(context, samples)
    collect.totals_samples(context, samples)
    collect.global_samples(context, samples)
    collect.auth_attempt_samples(context, samples)
    return samples


# Families rabbitmq_prometheus serves on /metrics and /metrics/per-object (the cluster_* families are only in
# /metrics/detailed; the auth attempts by source are not kept).
_CORE = [
    name
    for name, _, _ in FAMILIES
    if not name.startswith(("auth_attempts_detailed", "cluster_"))
    and name not in ("build_info", "identity_info")
]


class _Scrape:
    """A prometheus-client collector: one call of ``build`` per scrape."""

    def __init__(self, build: Callable[[], Iterable[Metric]]) -> None:
        self.build = build

    def collect(self) -> Iterator[Metric]:
        return iter(list(self.build()))


def _core(context: ManagementContext, per_object: bool) -> list[Metric]:
    samples = _all_samples(context, per_object)
    if not per_object:
        samples = collect.aggregate(samples)
    metrics = []
    for name in _CORE:
        if per_object and name.startswith("alarms_"):
            continue  # rabbitmq_prometheus serves the alarms in the aggregated /metrics only
        rows = samples.get(name, [])
        if not per_object and name == "queue_head_message_timestamp":
            rows = []  # a timestamp has no sum: RabbitMQ serves the family without samples
        elif not rows and not per_object and not name.startswith(("raft_", "alarms_", "auth_attempts")):
            rows = [({}, 0.0)]  # a sum over no objects is 0 (no queues: 0 messages ready)
        metrics.append(_family(PREFIX + name, name, rows))
    return metrics + _info(context) + _warrenmq(context)


def _detailed(context: ManagementContext, families: list[str], vhost: str | None) -> list[Metric]:
    samples: collect.Samples = defaultdict(list)
    wanted = [family for family in families if family in DETAILED]
    if any(family.startswith("node_") for family in wanted):
        collect.node_samples(context, samples)
    collect.queue_samples(context, samples, vhost)
    collect.channel_samples(context, samples, vhost)
    collect.cluster_samples(context, samples, vhost)
    metrics = []
    for family in wanted:
        for name in DETAILED[family]:
            full = PREFIX + name if name.startswith("cluster_") else f"{PREFIX}detailed_{name}"
            metrics.append(_family(full, name, samples.get(name, [])))
    return metrics + _info(context)


def exposition(build: Callable[[], Iterable[Metric]]) -> bytes:
    """The text exposition of the families ``build`` returns (called once, at this scrape)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape(build))
    return generate_latest(registry)


def core(context: ManagementContext, per_object: bool) -> bytes:
    """/metrics (aggregated) or /metrics/per-object."""
    return exposition(lambda: _core(context, per_object))


def detailed(context: ManagementContext, families: list[str], vhost: str | None) -> bytes:
    """/metrics/detailed?family=...&vhost=..."""
    return exposition(lambda: _detailed(context, families, vhost))


def memory(context: ManagementContext) -> bytes:
    """/metrics/memory-breakdown (rabbitmq_prometheus 4.1+)."""
    return exposition(lambda: _memory(context))


def _memory(context: ManagementContext) -> list[Metric]:
    memory = breakdown(context)
    metrics: list[Metric] = []
    for name, help_text, key in MEMORY_BREAKDOWN:
        metric = GaugeMetricFamily(PREFIX + name, help_text)
        metric.add_metric([], float(memory.get(key, 0)))
        metrics.append(metric)
    return metrics + _info(context)
