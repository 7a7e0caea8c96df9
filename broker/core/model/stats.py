"""Message statistics: plain integer counters bumped on the hot path, and the sample history that turns them
into RabbitMQ's rates. Pure: the sampler (outer ring) passes the time in.

A counter increment is all the hot path does (hot-path rule 7). ``Series`` keeps (timestamp, values) samples
taken every ``collect_statistics_interval``; a rate is the difference of the last two samples over their time
span, as rabbit_mgmt_stats computes ``rate`` in ``*_details``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar


class QueueStats:
    """rabbit_mgmt's queue message_stats (queue_stats_publish, queue_msg_stats, queue_delivery_stats), and
    its queue_msg_rates: ``disk_writes`` counts the messages the queue handed to the durable store or paged
    out to a spill file, ``disk_reads`` those it read back (recovery at boot, paging in), as
    rabbit_variable_queue's disk_write_count/disk_read_count count messages, not file operations."""

    __slots__ = (
        "ack",
        "deliver",
        "deliver_no_ack",
        "disk_reads",
        "disk_writes",
        "get",
        "get_empty",
        "get_no_ack",
        "publish",
        "redeliver",
    )
    FIELDS: ClassVar[tuple[str, ...]] = (
        "publish",
        "deliver",
        "deliver_no_ack",
        "get",
        "get_no_ack",
        "get_empty",
        "ack",
        "redeliver",
    )
    # Not in FIELDS: RabbitMQ shows them per vhost and node-wide (vhost_msg_rates), never in a queue's
    # message_stats (rabbit_mgmt_format drops them from queue rows).
    DISK_FIELDS: ClassVar[tuple[str, ...]] = ("disk_reads", "disk_writes")

    def __init__(self) -> None:
        self.publish = self.deliver = self.deliver_no_ack = self.get = self.get_no_ack = 0
        self.get_empty = self.ack = self.redeliver = 0
        self.disk_reads = self.disk_writes = 0


class ExchangeStats:
    """publish_in: messages published to the exchange; publish_out: copies it routed to queues."""

    __slots__ = ("publish_in", "publish_out")
    FIELDS: ClassVar[tuple[str, ...]] = ("publish_in", "publish_out")

    def __init__(self) -> None:
        self.publish_in = self.publish_out = 0


class ChannelStats:
    """A channel's message_stats; a vhost keeps one more for the channels that have closed."""

    __slots__ = (
        "ack",
        "confirm",
        "deliver",
        "deliver_no_ack",
        "drop_unroutable",
        "get",
        "get_empty",
        "get_no_ack",
        "publish",
        "publish_confirm",
        "redeliver",
        "return_unroutable",
    )
    FIELDS: ClassVar[tuple[str, ...]] = (
        "publish",
        "confirm",
        "return_unroutable",
        "drop_unroutable",
        "deliver",
        "deliver_no_ack",
        "get",
        "get_no_ack",
        "get_empty",
        "ack",
        "redeliver",
        "publish_confirm",
    )

    def __init__(self) -> None:
        # publish_confirm (publishes on a channel in confirm mode) is set when the channel closes; while it
        # is open its publish_seq counts them, at no cost to the hot path.
        self.publish_confirm = 0
        self.publish = self.confirm = self.return_unroutable = self.drop_unroutable = 0
        self.deliver = self.deliver_no_ack = self.get = self.get_no_ack = self.get_empty = 0
        self.ack = self.redeliver = 0

    def add(self, other: ChannelStats) -> None:
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class ChurnStats:
    """The overview's churn_rates: objects created, declared, closed and deleted since boot."""

    __slots__ = (
        "channel_closed",
        "channel_created",
        "connection_closed",
        "connection_created",
        "queue_created",
        "queue_declared",
        "queue_deleted",
    )
    FIELDS: ClassVar[tuple[str, ...]] = (
        "channel_closed",
        "channel_created",
        "connection_closed",
        "connection_created",
        "queue_created",
        "queue_declared",
        "queue_deleted",
    )

    def __init__(self) -> None:
        self.channel_closed = self.channel_created = self.connection_closed = self.connection_created = 0
        self.queue_created = self.queue_declared = self.queue_deleted = 0


def values(counters: Any, fields: Sequence[str]) -> tuple[int, ...]:
    return tuple(getattr(counters, name) for name in fields)


# rabbit_mgmt_agent's default retention: samples over the last 60 s at 5 s, the basis of *_details.
MAX_SAMPLES = 121


class Series:
    """Samples of a tuple of values over time, newest last: the basis of ``rate`` and ``samples``.

    Kept as two lists, times and value tuples, and a tuple equal to the one before it is not stored again
    but shared: an idle queue's 121 samples then cost two lists of pointers (~2 KiB) instead of 121 fresh
    (time, values) pairs (~20 KiB; 100,000 queues grew the node by 2 GB in ten minutes). The sampler passes
    one time object for a whole slice of objects, so the times are shared too.
    """

    __slots__ = ("fields", "rows", "times")

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.times: list[int] = []
        self.rows: list[tuple[int, ...]] = []

    @property
    def samples(self) -> list[tuple[int, tuple[int, ...]]]:
        """(time, values) pairs, oldest first."""
        return list(zip(self.times, self.rows, strict=True))

    def record(self, now_ms: int, current: tuple[int, ...]) -> None:
        times, rows = self.times, self.rows
        if times and times[-1] >= now_ms:
            times.pop()  # two samples at one instant: the later one stands
            rows.pop()
        if rows and rows[-1] == current:
            current = rows[-1]
        times.append(now_ms)
        rows.append(current)
        if len(times) > MAX_SAMPLES:
            del times[0]
            del rows[0]

    def rates(self) -> dict[str, float]:
        """Per-second change between the last two samples; 0.0 before there are two."""
        if len(self.times) < 2:
            return dict.fromkeys(self.fields, 0.0)
        t0, t1 = self.times[-2], self.times[-1]
        old, new = self.rows[-2], self.rows[-1]
        if old is new:
            return dict.fromkeys(self.fields, 0.0)
        span_s = (t1 - t0) / 1000.0
        return {name: (b - a) / span_s for name, a, b in zip(self.fields, old, new, strict=True)}

    def history(self, field: str, now_ms: int, age_s: int, incr_s: int) -> list[dict[str, int]]:
        """rabbit_mgmt_stats samples for ``?<kind>_age=&<kind>_incr=``: newest first, one per ``incr_s``
        back to ``age_s`` ago, each the value at the latest sample taken at or before that instant."""
        index = self.fields.index(field)
        out: list[dict[str, int]] = []
        if not self.times or incr_s <= 0:
            return out
        newest = now_ms - now_ms % (incr_s * 1000)
        oldest = now_ms - age_s * 1000
        ordered = self.samples
        instant = newest
        while instant >= oldest:
            older = [values_ for ts, values_ in ordered if ts <= instant]
            if not older:
                break
            out.append({"sample": older[-1][index], "timestamp": instant})
            instant -= incr_s * 1000
        return out
