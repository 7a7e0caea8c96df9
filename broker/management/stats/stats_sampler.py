"""The statistics sampler: every ``collect_statistics_interval`` (RabbitMQ's 5 s default) it reads the hot
path's counters and the queues' lengths into each object's sample history, off the hot path, on the injected
clock.

Readers (the management resources) ask for an object's current counts and rates through ``counts``/``rates``;
nothing here runs per message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from broker.core.model.clock import TimerHandle
from broker.core.model.stats import ChannelStats, ChurnStats, ExchangeStats, QueueStats, Series, values
from broker.management.stats import live
from broker.management.stats.stream_info import ready_messages

if TYPE_CHECKING:
    from broker.core.queues.queue import Queue
    from broker.core.topology.vhost import VirtualHost
    from broker.server.server import Server

LENGTHS = ("messages", "messages_ready", "messages_unacknowledged")
OCTETS = ("recv_oct", "send_oct")
CONNECTION = ("recv_oct", "send_oct", "recv_cnt", "send_cnt")
QUEUE_FIELDS = QueueStats.FIELDS + LENGTHS
EXCHANGE_FIELDS = ExchangeStats.FIELDS
CHANNEL_FIELDS = ChannelStats.FIELDS
DISK = QueueStats.DISK_FIELDS
# A vhost's (and the node's) totals: its channels' message_stats, its queues' lengths, its connections'
# octets, and its queues' disk reads and writes (RabbitMQ's vhost_msg_rates).
TOTAL_FIELDS = ChannelStats.FIELDS + LENGTHS + OCTETS + DISK
CHURN_FIELDS = ChurnStats.FIELDS
DEFAULT_INTERVAL_S = 5.0

Key = tuple[str, ...]
# (key, owner, fields, values) of one object in a pass
Sampled = tuple[Key, object, tuple[str, ...], tuple[int, ...]]
# Objects sampled per loop turn (~10 µs each): a pass over 100,000 queues yields to the loop 50 times.
CHUNK = 2_000


def queue_lengths(queue: Queue) -> tuple[int, int, int]:
    ready = ready_messages(queue)
    return ready + queue.unacked, ready, queue.unacked


class StatsSampler:
    """Keeps a ``Series`` per queue, exchange, vhost, connection and channel, plus the node's totals.

    A pass over every object runs in slices of ``CHUNK`` objects, one slice per loop turn, so that a node with
    100,000 queues is never stopped for the whole pass (a full pass then took ~1.2 s on the 2-core machine,
    during which no AMQP frame was read). Each object's sample carries the time its slice ran.
    """

    def __init__(self, server: Server, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.server = server
        self.interval_s = interval_s
        self.series: dict[Key, tuple[object, Series]] = {}
        self._timer: TimerHandle | None = None
        self._pass: Iterator[Sampled] | None = None
        self._seen: set[Key] = set()
        self._next_slice: asyncio.Handle | None = None

    # -- scheduling

    def start(self) -> None:
        """Sample now and every interval; a second call does nothing (the management listener starts the
        sampler at boot, its application once more when a first request builds it)."""
        if self._timer is not None:
            return
        self.sample()
        self._schedule()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._next_slice is not None:
            self._next_slice.cancel()
            self._next_slice = None
        self._pass = None

    def _schedule(self) -> None:
        self._timer = self.server.clock.call_later(self.interval_s, self._tick)

    def _tick(self) -> None:
        self._schedule()
        if self._pass is not None:  # the last pass outlived an interval: finish it first
            self._run_slice(None)
        self._begin()
        self._run_slice(CHUNK)

    # -- current values (read at request time too, so counts are never a sample behind)

    def current(self, key: Key) -> tuple[object, tuple[str, ...], tuple[int, ...]] | None:
        broker = self.server.broker
        kind = key[0]
        if kind in ("vhost", "overview"):
            per_vhost, grand = self._totals()
            if kind == "overview":
                return broker, TOTAL_FIELDS, grand
            vhost = broker.vhosts.get(key[1])
            totals = per_vhost.get(key[1])
            return None if vhost is None or totals is None else (vhost, TOTAL_FIELDS, totals)
        if kind == "churn":
            return broker.churn, CHURN_FIELDS, values(broker.churn, ChurnStats.FIELDS)
        for found, owner, fields, now in self._objects():
            if found == key:
                return owner, fields, now
        return None

    def _totals(self) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
        """Each vhost's totals (its channels, closed ones included, its queues' lengths, its connections'
        octets) and their sum; one walk over the connections for every vhost."""
        broker = self.server.broker
        by_vhost: dict[str, list[Any]] = {}
        for protocol in live.open_connections(self.server):
            by_vhost.setdefault(live.connection_vhost(protocol), []).append(protocol)
        grand = [0] * len(TOTAL_FIELDS)
        per_vhost: dict[str, tuple[int, ...]] = {}
        for vhost in broker.vhosts.values():
            totals = self._vhost_totals(vhost, by_vhost.get(vhost.name, []))
            grand = [a + b for a, b in zip(grand, totals, strict=True)]
            per_vhost[vhost.name] = totals
        return per_vhost, tuple(grand)

    def _objects(self) -> Iterator[Sampled]:
        # Lists, not live views: a pass may span loop turns, during which queues come and go.
        broker = self.server.broker
        per_vhost, grand = self._totals()
        for vhost in list(broker.vhosts.values()):
            totals = per_vhost.get(vhost.name)
            if totals is not None:
                yield ("vhost", vhost.name), vhost, TOTAL_FIELDS, totals
            for queue in list(vhost.queues.values()):
                yield (
                    ("queue", vhost.name, queue.name),
                    queue,
                    QUEUE_FIELDS,
                    values(queue.stats, QueueStats.FIELDS) + queue_lengths(queue),
                )
            for exchange in list(vhost.exchanges.values()):
                yield (
                    ("exchange", vhost.name, exchange.name),
                    exchange,
                    EXCHANGE_FIELDS,
                    values(exchange.stats, ExchangeStats.FIELDS),
                )
        yield ("overview",), broker, TOTAL_FIELDS, grand
        yield ("churn",), broker.churn, CHURN_FIELDS, values(broker.churn, ChurnStats.FIELDS)
        for protocol in live.open_connections(self.server):
            if protocol.session is None:  # closed since the pass began
                continue
            yield ("connection", protocol.name), protocol, CONNECTION, values(protocol, CONNECTION)
            for number, channel in live.channels(protocol):
                yield (
                    ("channel", live.channel_name(protocol, number)),
                    channel,
                    CHANNEL_FIELDS,
                    values(channel.stats, ChannelStats.FIELDS),
                )

    @staticmethod
    def _vhost_totals(vhost: VirtualHost, connections: list[Any]) -> tuple[int, ...]:
        counts = list(values(vhost.channel_totals, ChannelStats.FIELDS))
        recv = send = 0
        for protocol in connections:
            recv += protocol.recv_oct
            send += protocol.send_oct
            for _, channel in live.channels(protocol):
                if not channel.closing:
                    counts = [
                        a + b for a, b in zip(counts, values(channel.stats, ChannelStats.FIELDS), strict=True)
                    ]
        messages = ready = unacked = 0
        deleted = vhost.deleted_queue_totals
        disk_reads, disk_writes = deleted.disk_reads, deleted.disk_writes
        for queue in vhost.queues.values():
            total, r, u = queue_lengths(queue)
            messages, ready, unacked = messages + total, ready + r, unacked + u
            disk_reads += queue.stats.disk_reads
            disk_writes += queue.stats.disk_writes
        return (*counts, messages, ready, unacked, recv, send, disk_reads, disk_writes)

    # -- sampling

    def sample(self) -> None:
        """One whole pass now (start-up, and whatever needs a sample at once)."""
        if self._pass is not None:
            self._run_slice(None)
        self._begin()
        self._run_slice(None)

    def _begin(self) -> None:
        self._pass = self._objects()
        self._seen = set()

    def _run_slice(self, limit: int | None) -> None:
        """Record up to ``limit`` objects of the pass (all with None); the rest goes on next loop turn."""
        self._next_slice = None
        objects = self._pass
        if objects is None:
            return
        now_ms = self.server.clock.now_ms()
        seen, series = self._seen, self.series
        count = 0
        for key, owner, fields, now in objects if limit is None else islice(objects, limit):
            count += 1
            seen.add(key)
            entry = series.get(key)
            if entry is None or entry[0] is not owner:  # new, or a new object under an old name
                entry = series[key] = (owner, Series(fields))
            entry[1].record(now_ms, now)
        if count == limit:
            # A full slice: there may be more (an exhausted pass is noticed on the next, empty, slice).
            self._next_slice = self.server.loop.call_soon(self._run_slice, limit)
            return
        self._pass = None
        for key in series.keys() - seen:
            del series[key]

    def history(self, key: Key, owner: object) -> Series | None:
        entry = self.series.get(key)
        return entry[1] if entry is not None and entry[0] is owner else None
