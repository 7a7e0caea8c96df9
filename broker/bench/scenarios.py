"""The benchmark scenarios (those of perf/amqpperf.c): set up, run workers in processes, measure."""

from __future__ import annotations

import functools
import multiprocessing
import random
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pamqp import commands

from broker.bench.client import BenchError, Connection
from broker.bench.decode import SIZES_KB
from broker.bench.decode import scaling as decode_scaling
from broker.bench.workers import confirm_publish, consume, declare_nowait, open_idle, produce
from protocol.codec import make_method


@dataclass
class Result:
    scenario: str
    params: dict[str, Any]
    rate: float  # messages per second (published or consumed, per the scenario)
    deliveries_per_s: float | None = None
    latency_us: dict[str, float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _pool(workers: int) -> ProcessPoolExecutor:
    # fork: the runner is single-threaded and holds no event loop, and forked workers start in milliseconds.
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))


def _percentiles(samples: list[float]) -> dict[str, float] | None:
    if not samples:
        return None
    ordered = sorted(samples)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    return {
        "p50": at(0.50),
        "p95": at(0.95),
        "p99": at(0.99),
        "max": round(ordered[-1], 1),
        "n": len(ordered),
    }


def _name(kind: str) -> str:
    return f"bench.{kind}.{uuid.uuid4().hex[:8]}"


def _wait(condition: Callable[[], bool], timeout_s: float = 120.0) -> float:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise BenchError("timed out waiting for the broker to catch up")
        time.sleep(0.005)  # polling a remote broker over AMQP: there is no event to wait on
    return time.monotonic()


def publish_only(url: str, size: int = 16, count: int = 300_000) -> Result:
    """Publish into one queue with no consumer; the rate counts until every message is enqueued."""
    control = Connection(url)
    control.open_channel(1)
    queue = _name("publish")
    control.declare_queue(1, queue)
    with _pool(1) as pool:
        produced = pool.submit(produce, url, "", [queue], size, count).result()
    done = _wait(lambda: control.message_count(1, queue) >= count)
    control.rpc(1, make_method(commands.Queue.Delete, queue=queue), commands.Queue.DeleteOk)
    control.close()
    seconds = done - produced["started"]
    return Result(
        "publish", {"size": size, "count": count}, count / seconds, extra={"send_s": produced["send_s"]}
    )


def pubsub(
    url: str,
    size: int = 16,
    count: int = 300_000,
    ack: str = "none",
    prefetch: int = 0,
    multi_every: int = 50,
    rate: float = 0.0,
) -> Result:
    """One producer → one queue → one consumer on separate connections (and processes)."""
    control = Connection(url)
    control.open_channel(1)
    queue = _name("pubsub")
    control.declare_queue(1, queue)
    stamped = bool(rate) or size >= 8
    with _pool(2) as pool:
        consumer: Future[dict[str, Any]] = pool.submit(
            consume, url, [queue], count, ack, prefetch, multi_every
        )
        _wait(lambda: int(control.declare_queue(1, queue).consumer_count or 0) >= 1)
        produced = pool.submit(produce, url, "", [queue], size, count, rate, 500, stamped).result()
        consumed = consumer.result()
    control.rpc(1, make_method(commands.Queue.Delete, queue=queue), commands.Queue.DeleteOk)
    control.close()
    seconds = consumed["last"] - produced["started"]
    params = {"size": size, "count": count, "ack": ack, "prefetch": prefetch, "rate": rate}
    return Result(
        "pubsub", params, consumed["received"] / seconds, latency_us=_percentiles(consumed["latencies_us"])
    )


def fanout(url: str, size: int = 16, count: int = 30_000, queues: int = 10, rate: float = 0.0) -> Result:
    """A fanout exchange to ``queues`` queues, each consumed on its own connection (one consumer process)."""
    control = Connection(url)
    control.open_channel(1)
    exchange = _name("fanout")
    names = [_name("fanout-q") for _ in range(queues)]
    methods: list[Any] = [
        make_method(commands.Exchange.Declare, exchange=exchange, exchange_type="fanout", nowait=True)
    ]
    for name in names:
        methods.append(make_method(commands.Queue.Declare, queue=name, nowait=True, arguments={}))
        methods.append(
            make_method(commands.Queue.Bind, queue=name, exchange=exchange, nowait=True, arguments={})
        )
    declare_nowait(control, methods)
    with _pool(2) as pool:
        consumer = pool.submit(consume, url, names, count * queues)
        _wait(lambda: all(int(control.declare_queue(1, n).consumer_count or 0) for n in names))
        produced = pool.submit(produce, url, exchange, [""], size, count, rate, 500, True).result()
        consumed = consumer.result()
    for name in names:
        control.rpc(1, make_method(commands.Queue.Delete, queue=name), commands.Queue.DeleteOk)
    control.rpc(1, make_method(commands.Exchange.Delete, exchange=exchange), commands.Exchange.DeleteOk)
    control.close()
    seconds = consumed["last"] - produced["started"]
    deliveries = consumed["received"] / seconds
    return Result(
        "fanout",
        {"size": size, "count": count, "queues": queues, "rate": rate},
        deliveries / queues,
        deliveries_per_s=deliveries,
        latency_us=_percentiles(consumed["latencies_us"]),
    )


def _topic_matches(pattern: str, key: str) -> bool:
    """A naive recursive topic matcher (``*`` one word, ``#`` zero or more): the exact-count reference."""
    words, parts = pattern.split("."), key.split(".")

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(words):
            return j == len(parts)
        if words[i] == "#":
            return match(i + 1, j) or (j < len(parts) and match(i, j + 1))
        return j < len(parts) and words[i] in ("*", parts[j]) and match(i + 1, j + 1)

    return match(0, 0)


def topic(
    url: str, count: int = 3_000, bindings: int = 10_000, queues: int = 10, keys: int = 1_000, seed: int = 42
) -> Result:
    """A topic exchange: ``bindings`` random patterns over ``queues`` queues; checks exact counts."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(32)]

    def pattern() -> str:
        return ".".join(
            rng.choices([rng.choice(vocab), "*", "#"], weights=[70, 20, 10])[0]
            for _ in range(rng.randint(2, 5))
        )

    control = Connection(url)
    control.open_channel(1)
    exchange = _name("topic")
    names = [_name("topic-q") for _ in range(queues)]
    patterns = [(pattern(), rng.randrange(queues)) for _ in range(bindings)]
    methods: list[Any] = [
        make_method(commands.Exchange.Declare, exchange=exchange, exchange_type="topic", nowait=True)
    ]
    methods += [make_method(commands.Queue.Declare, queue=name, nowait=True, arguments={}) for name in names]
    methods += [
        make_method(
            commands.Queue.Bind, queue=names[q], exchange=exchange, routing_key=p, nowait=True, arguments={}
        )
        for p, q in patterns
    ]
    declare_nowait(control, methods)
    routing_keys = [".".join(rng.choice(vocab) for _ in range(rng.randint(2, 5))) for _ in range(keys)]
    by_queue: list[list[str]] = [[] for _ in range(queues)]
    for p, q in patterns:
        by_queue[q].append(p)
    # A queue gets one copy when any of its bindings matches: stop at the first match.
    per_key = [
        {q for q in range(queues) if any(_topic_matches(p, key) for p in by_queue[q])} for key in routing_keys
    ]
    expected = [0] * queues
    for i in range(count):
        for q in per_key[i % keys]:
            expected[q] += 1
    with _pool(1) as pool:
        produced = pool.submit(produce, url, exchange, routing_keys, 16, count).result()
    done = _wait(lambda: sum(control.message_count(1, n) for n in names) >= sum(expected))
    observed = [control.message_count(1, n) for n in names]
    for name in names:
        control.rpc(1, make_method(commands.Queue.Delete, queue=name), commands.Queue.DeleteOk)
    control.rpc(1, make_method(commands.Exchange.Delete, exchange=exchange), commands.Exchange.DeleteOk)
    control.close()
    if observed != expected:
        raise BenchError(f"topic routing differs from the reference matcher: {observed} != {expected}")
    params = {"count": count, "bindings": bindings, "queues": queues, "keys": keys}
    return Result("topic", params, count / (done - produced["started"]), extra={"exact_counts": True})


def confirm(
    url: str, size: int = 1024, count: int = 100_000, window: int = 1000, persistent: bool = True
) -> Result:
    """Publisher confirms with at most ``window`` in flight, into a durable queue."""
    control = Connection(url)
    control.open_channel(1)
    queue = _name("confirm")
    control.declare_queue(1, queue, durable=True)
    with _pool(1) as pool:
        result = pool.submit(confirm_publish, url, queue, size, count, window, persistent).result()
    control.rpc(1, make_method(commands.Queue.Delete, queue=queue), commands.Queue.DeleteOk)
    control.close()
    params = {"size": size, "count": count, "window": window, "persistent": persistent}
    return Result("confirm", params, result["confirmed"] / result["seconds"])


def decode(url: str, count: int = 1) -> Result:
    """Field-table decoding from 1 KB to 1 MB in this process (``url`` is not used): linear scaling."""
    del url
    started = time.monotonic()
    figures = decode_scaling(count)
    tables = len(figures)
    return Result(
        "decode", {"sizes_kb": list(SIZES_KB)}, tables / (time.monotonic() - started), extra=figures
    )


def conns(url: str, n: int = 1_000, pid: int = 0) -> Result:
    """Hold ``n`` idle connections; with the broker's ``pid``, report its RSS growth per connection."""

    def rss_kb() -> int:
        if not pid:
            return 0
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))

    before = rss_kb()
    started = time.monotonic()
    held = open_idle(url, n)
    opened_s = time.monotonic() - started
    after = rss_kb()
    for conn in held:
        conn.close()
    extra = {"open_s": round(opened_s, 3), "rss_before_kb": before, "rss_after_kb": after}
    if pid:
        extra["kb_per_conn"] = round((after - before) / n, 1)
    return Result("conns", {"conns": n}, n / opened_s, extra=extra)
