"""message_stats and the ``*_details`` objects as RabbitMQ's management API returns them: counts read live
from the counters, ``rate`` from the sampler's last two samples, and ``samples``/``avg``/``avg_rate`` when the
request asks for a window (``lengths_age``/``lengths_incr``, ``msg_rates_age``/``msg_rates_incr``,
``data_rates_age``/``data_rates_incr``). Adds keys to rows the entity serializers built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.core.model.stats import ChannelStats, ExchangeStats, QueueStats, Series, values
from broker.management.stats.stats_sampler import CONNECTION, LENGTHS, Key, StatsSampler
from broker.management.views.serialize import exchange_json, queue_json, vhost_json
from broker.management.views.serialize_live import channel_json, connection_json, owner_details

if TYPE_CHECKING:
    from broker.management.context import ManagementContext

QUEUE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("publish",),
    ("ack", "deliver", "deliver_no_ack", "get", "get_empty", "get_no_ack", "redeliver"),
)
CHANNEL_GROUPS: tuple[tuple[str, ...], ...] = (
    ("confirm", "drop_unroutable", "publish", "return_unroutable"),
    ("ack", "deliver", "deliver_no_ack", "get", "get_empty", "get_no_ack", "redeliver"),
)
EXCHANGE_GROUPS: tuple[tuple[str, ...], ...] = (("publish_in",), ("publish_out",))
# deliver_get sums what left the queue for a client, by consume or by get (rabbit_mgmt_format).
_DELIVER_GET = ("deliver", "deliver_no_ack", "get", "get_no_ack")


@dataclass(frozen=True)
class Window:
    """A request's ``<kind>_age``/``<kind>_incr`` in seconds, per kind (lengths, msg_rates, data_rates)."""

    ages: Mapping[str, tuple[int, int]]

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Window:
        ages: dict[str, tuple[int, int]] = {}
        for kind in ("lengths", "msg_rates", "data_rates"):
            age, incr = query.get(f"{kind}_age"), query.get(f"{kind}_incr")
            if age is not None and incr is not None and age.isdigit() and incr.isdigit():
                ages[kind] = (int(age), int(incr))
        return cls(ages)


NO_WINDOW = Window({})


@dataclass
class Stats:
    """One object's view: its sample history (None before the first sample) and the request's window."""

    sampler: StatsSampler
    series: Series | None
    window: Window

    def rate(self, field: str) -> float:
        if self.series is None or field not in self.series.fields:
            return 0.0
        return self.series.rates()[field]

    def details(self, field: str, kind: str, current: int | None = None) -> dict[str, Any]:
        """``current``: a gauge's value as the row reports it, read at request time; it becomes the newest
        sample. The samples are the sampler's, taken every collect_statistics_interval and aligned on
        ``incr``, so the newest one can be up to an interval plus an ``incr`` old: RabbitMQ's UI draws a
        chart and its legend from the same collected sample, and WarrenMQ's legend is the live count, so
        without this the chart ended at the count of ten seconds earlier (a flat 0 under a legend of 100
        unacknowledged)."""
        out: dict[str, Any] = {"rate": self.rate(field)}
        window = self.window.ages.get(kind)
        if window is None or self.series is None or field not in self.series.fields:
            return out
        now_ms = self.sampler.server.clock.now_ms()
        samples = self.series.history(field, now_ms, *window)
        if samples and current is not None:
            samples[0] = {"sample": current, "timestamp": samples[0]["timestamp"]}
        out["samples"] = samples
        if samples:
            out["avg"] = sum(s["sample"] for s in samples) / len(samples)
            newest, oldest = samples[0], samples[-1]
            span_s = (newest["timestamp"] - oldest["timestamp"]) / 1000.0
            out["avg_rate"] = (newest["sample"] - oldest["sample"]) / span_s if span_s else 0.0
        else:
            out["avg"] = out["avg_rate"] = 0.0
        return dict(sorted(out.items()))

    def message_stats(
        self, counts: Mapping[str, int], groups: Sequence[Sequence[str]], always: bool = False
    ) -> dict[str, Any]:
        """The groups with any count (RabbitMQ shows a stats table once it has a row); all when
        ``always``."""
        out: dict[str, Any] = {}
        for group in groups:
            if always or any(counts[name] for name in group):
                for name in group:
                    out[name] = counts[name]
                    out[f"{name}_details"] = self.details(name, "msg_rates")
        if any(name in out for name in _DELIVER_GET):
            out["deliver_get"] = sum(counts.get(name, 0) for name in _DELIVER_GET)
            out["deliver_get_details"] = self._sum_details(_DELIVER_GET)
        return dict(sorted(out.items()))

    def _sum_details(self, names: Sequence[str]) -> dict[str, Any]:
        """The details of a sum of counters (deliver_get): rates and samples added up."""
        parts = [self.details(name, "msg_rates") for name in names]
        out: dict[str, Any] = {"rate": sum(part["rate"] for part in parts)}
        if "samples" in parts[0]:
            out["avg"] = sum(part["avg"] for part in parts)
            out["avg_rate"] = sum(part["avg_rate"] for part in parts)
            out["samples"] = [
                {
                    "sample": sum(part["samples"][i]["sample"] for part in parts),
                    "timestamp": sample["timestamp"],
                }
                for i, sample in enumerate(parts[0]["samples"])
            ]
        return dict(sorted(out.items()))

    def lengths(self, row: dict[str, Any]) -> None:
        for name in LENGTHS:
            if name in row:
                row[f"{name}_details"] = self.details(name, "lengths", row[name])


def view(sampler: StatsSampler, key: Key, owner: object, window: Window) -> Stats:
    return Stats(sampler, sampler.history(key, owner), window)


def add_queue_stats(row: dict[str, Any], queue: Any, sampler: StatsSampler, window: Window) -> None:
    stats = view(sampler, ("queue", queue.vhost, queue.name), queue, window)
    counts = dict(zip(QueueStats.FIELDS, values(queue.stats, QueueStats.FIELDS), strict=True))
    message_stats = stats.message_stats(counts, QUEUE_GROUPS)
    if message_stats:
        row["message_stats"] = message_stats
    stats.lengths(row)


def add_exchange_stats(
    row: dict[str, Any], vhost: str, exchange: Any, sampler: StatsSampler, window: Window
) -> None:
    stats = view(sampler, ("exchange", vhost, exchange.name), exchange, window)
    counts = dict(zip(ExchangeStats.FIELDS, values(exchange.stats, ExchangeStats.FIELDS), strict=True))
    message_stats = stats.message_stats(counts, EXCHANGE_GROUPS)
    if message_stats:
        row["message_stats"] = message_stats


def totals_counts(sampler: StatsSampler, key: Key) -> dict[str, int]:
    found = sampler.current(key)
    if found is None:
        return {}
    _, fields, now = found
    return dict(zip(fields, now, strict=True))


def add_vhost_stats(row: dict[str, Any], vhost: Any, sampler: StatsSampler, window: Window) -> None:
    key = ("vhost", vhost.name)
    stats = view(sampler, key, vhost, window)
    counts = totals_counts(sampler, key)
    if not counts:
        return
    message_stats = stats.message_stats(counts, CHANNEL_GROUPS)
    if message_stats:
        row["message_stats"] = message_stats
    stats.lengths(row)
    for name in ("recv_oct", "send_oct"):
        row[name] = counts[name]
        row[f"{name}_details"] = stats.details(name, "data_rates")


def add_connection_stats(row: dict[str, Any], protocol: Any, sampler: StatsSampler, window: Window) -> None:
    stats = view(sampler, ("connection", protocol.name), protocol, window)
    for name in CONNECTION:
        row[name] = int(getattr(protocol, name, 0))
        if name.endswith("_oct"):
            row[f"{name}_details"] = stats.details(name, "data_rates")


def add_channel_stats(row: dict[str, Any], channel: Any, sampler: StatsSampler, window: Window) -> None:
    stats = view(sampler, ("channel", row["name"]), channel, window)
    counts = dict(zip(ChannelStats.FIELDS, values(channel.stats, ChannelStats.FIELDS), strict=True))
    message_stats = stats.message_stats(counts, CHANNEL_GROUPS)
    if message_stats:
        row["message_stats"] = message_stats


# -- rows for the resources: the entity serializer's row plus its statistics


def window_of(request: Any) -> Window:
    return Window.from_query(request.query) if request is not None else NO_WINDOW


def queue_row(context: ManagementContext, queue: Any, request: Any = None) -> dict[str, Any]:
    row = queue_json(queue, context.node)
    add_queue_stats(row, queue, context.sampler, window_of(request))
    owner = queue.exclusive_owner
    if owner is not None:
        # rabbit_mgmt_format: an exclusive queue's owner_pid becomes the owning connection's name and peer.
        for protocol in context.open_connections():
            if protocol.session is owner or protocol is owner:
                row["owner_pid_details"] = owner_details(protocol)
                break
    return row


def exchange_row(
    context: ManagementContext, exchange: Any, vhost: str, request: Any = None
) -> dict[str, Any]:
    row = exchange_json(exchange, vhost)
    add_exchange_stats(row, vhost, exchange, context.sampler, window_of(request))
    return row


def vhost_row(
    context: ManagementContext, vhost: Any, metadata: dict[str, Any], request: Any = None
) -> dict[str, Any]:
    row = vhost_json(vhost, context.node, metadata)
    add_vhost_stats(row, vhost, context.sampler, window_of(request))
    tracer = context.broker.events.tracer
    row["tracing"] = tracer is not None and vhost.name in tracer.vhosts
    return row


def connection_row(context: ManagementContext, protocol: Any, request: Any = None) -> dict[str, Any]:
    row = connection_json(protocol, context.node)
    add_connection_stats(row, protocol, context.sampler, window_of(request))
    return row


def channel_row(
    context: ManagementContext, protocol: Any, number: int, channel: Any, request: Any = None
) -> dict[str, Any]:
    row = channel_json(protocol, number, channel, context.node)
    add_channel_stats(row, channel, context.sampler, window_of(request))
    return row


def add_overview_stats(body: dict[str, Any], context: ManagementContext, request: Any = None) -> None:
    """The node's message_stats (every vhost's channels, closed ones included), queue_totals' details and
    churn_rates, over the same sampler."""
    sampler, window = context.sampler, window_of(request)
    broker = context.broker
    stats = view(sampler, ("overview",), broker, window)
    counts = totals_counts(sampler, ("overview",))
    message_stats = body.get("message_stats", {})
    message_stats.update(stats.message_stats(counts, CHANNEL_GROUPS, always=True))
    for name in QueueStats.DISK_FIELDS:  # every queue's, deleted ones included (vhost_msg_rates)
        message_stats[name] = counts.get(name, 0)
        message_stats[f"{name}_details"] = stats.details(name, "msg_rates")
    body["message_stats"] = dict(sorted(message_stats.items()))
    stats.lengths(body.get("queue_totals", {}))
    churn = view(sampler, ("churn",), broker.churn, window)
    churn_counts = totals_counts(sampler, ("churn",))
    body["churn_rates"] = {
        key: value
        for name in sorted(churn_counts)
        for key, value in ((name, churn_counts[name]), (f"{name}_details", churn.details(name, "msg_rates")))
    }
