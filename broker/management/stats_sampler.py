"""The statistics sampler: every ``collect_statistics_interval`` (RabbitMQ's 5 s default) it reads the hot
path's counters and the queues' lengths into each object's sample history, off the hot path, on the injected
clock.

Readers (the management resources) ask for an object's current counts and rates through ``counts``/``rates``;
nothing here runs per message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from broker.core.clock import TimerHandle
from broker.core.stats import ChannelStats, ChurnStats, ExchangeStats, QueueStats, Series, values
from broker.management import live
from broker.management.stream_info import ready_messages

if TYPE_CHECKING:
    from broker.core.queue import Queue
    from broker.core.vhost import VirtualHost
    from broker.server.listener import Server

LENGTHS = ("messages", "messages_ready", "messages_unacknowledged")
OCTETS = ("recv_oct", "send_oct")
CONNECTION = ("recv_oct", "send_oct", "recv_cnt", "send_cnt")
QUEUE_FIELDS = QueueStats.FIELDS + LENGTHS
EXCHANGE_FIELDS = ExchangeStats.FIELDS
CHANNEL_FIELDS = ChannelStats.FIELDS
TOTAL_FIELDS = ChannelStats.FIELDS + LENGTHS + OCTETS
CHURN_FIELDS = ChurnStats.FIELDS
DEFAULT_INTERVAL_S = 5.0

Key = tuple[str, ...]


def queue_lengths(queue: Queue) -> tuple[int, int, int]:
    ready = ready_messages(queue)
    return ready + queue.unacked, ready, queue.unacked


class StatsSampler:
    """Keeps a ``Series`` per queue, exchange, vhost, connection and channel, plus the node's totals."""

    def __init__(self, server: Server, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.server = server
        self.interval_s = interval_s
        self.series: dict[Key, tuple[object, Series]] = {}
        self._timer: TimerHandle | None = None

    # -- scheduling

    def start(self) -> None:
        self.sample()
        self._schedule()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        self._timer = self.server.clock.call_later(self.interval_s, self._tick)

    def _tick(self) -> None:
        self.sample()
        self._schedule()

    # -- current values (read at request time too, so counts are never a sample behind)

    def current(self, key: Key) -> tuple[object, tuple[str, ...], tuple[int, ...]] | None:
        for found, owner, fields, now in self._objects():
            if found == key:
                return owner, fields, now
        return None

    def _objects(self) -> Iterator[tuple[Key, object, tuple[str, ...], tuple[int, ...]]]:
        broker = self.server.broker
        grand = [0] * len(TOTAL_FIELDS)
        connections = live.open_connections(self.server)
        for vhost in broker.vhosts.values():
            totals = self._vhost_totals(vhost, connections)
            grand = [a + b for a, b in zip(grand, totals, strict=True)]
            yield ("vhost", vhost.name), vhost, TOTAL_FIELDS, totals
            for queue in vhost.queues.values():
                yield (
                    ("queue", vhost.name, queue.name),
                    queue,
                    QUEUE_FIELDS,
                    values(queue.stats, QueueStats.FIELDS) + queue_lengths(queue),
                )
            for exchange in vhost.exchanges.values():
                yield (
                    ("exchange", vhost.name, exchange.name),
                    exchange,
                    EXCHANGE_FIELDS,
                    values(exchange.stats, ExchangeStats.FIELDS),
                )
        yield ("overview",), broker, TOTAL_FIELDS, tuple(grand)
        yield ("churn",), broker.churn, CHURN_FIELDS, values(broker.churn, ChurnStats.FIELDS)
        for protocol in connections:
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
            if live.connection_vhost(protocol) != vhost.name:
                continue
            recv += protocol.recv_oct
            send += protocol.send_oct
            for _, channel in live.channels(protocol):
                if not channel.closing:
                    counts = [
                        a + b for a, b in zip(counts, values(channel.stats, ChannelStats.FIELDS), strict=True)
                    ]
        messages = ready = unacked = 0
        for queue in vhost.queues.values():
            total, r, u = queue_lengths(queue)
            messages, ready, unacked = messages + total, ready + r, unacked + u
        return (*counts, messages, ready, unacked, recv, send)

    # -- sampling

    def sample(self) -> None:
        now_ms = self.server.clock.now_ms()
        seen: set[Key] = set()
        for key, owner, fields, now in self._objects():
            seen.add(key)
            entry = self.series.get(key)
            if entry is None or entry[0] is not owner:  # new, or a new object under an old name
                entry = self.series[key] = (owner, Series(fields))
            entry[1].record(now_ms, now)
        for key in [key for key in self.series if key not in seen]:
            del self.series[key]

    def history(self, key: Key, owner: object) -> Series | None:
        entry = self.series.get(key)
        return entry[1] if entry is not None and entry[0] is owner else None
