"""A soak: a broker under a steady mixed load for ``--minutes``, sampled every minute for growth.

The load (one client process, aio_pika, loopback only, bounded in time):

- persistent messages with publisher confirms into a durable classic and a quorum queue, consumed and acked
  (every 20th nacked with requeue, so returns and quorum delivery counts run too);
- messages into a queue with ``x-message-ttl`` nobody consumes: they expire and are dead-lettered through a
  fanout exchange to a queue that is consumed;
- delayed messages through a durable ``x-delayed-message`` exchange (held 200-1000 ms);
- churn: every second a connection opens, opens channels, declares an exclusive queue, publishes and
  consumes a few messages, and closes.

Every minute it writes one JSON line: the broker's RSS and open file descriptors (from /proc), its response
lag (round trip of a cheap synchronous method from a separate probe thread, 10 per second: the broker's event
loop answers it between its other work, so the round trip is the loop's lag plus loopback), and
publish-to-deliver p50/p99 of the consumed messages. ``benchmarks/plot_long_runs.py`` draws the lines.

    .venv/bin/python benchmarks/soak.py --minutes 30 --out /tmp/soak.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika
import pika

STAMP = struct.Struct(">d")


@dataclass
class Window:
    """What one minute saw; swapped out when it is reported."""

    latencies_ms: list[float] = field(default_factory=list)
    lags_ms: list[float] = field(default_factory=list)
    published: int = 0
    confirmed: int = 0
    delivered: int = 0
    dead_lettered: int = 0
    delayed: int = 0
    connections: int = 0
    errors: int = 0


class Broker:
    def __init__(self, data_dir: str) -> None:
        cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0"]
        cmd += ["--management-port", "-1", "--prometheus-port", "-1", "--data-dir", data_dir]
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        ready = json.loads(self.process.stdout.readline())
        self.url = f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/%2F"
        self.port = int(ready["amqp_port"])

    def memory_mb(self) -> dict[str, float]:
        """VmRSS and its anonymous and file-backed parts (/proc/PID/status), in MB."""
        out = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
        return out

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def probe(port: int, window: list[Window], stop: threading.Event) -> None:
    """The broker's response lag, 10 times a second, from its own thread and connection."""
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port, heartbeat=0))
    channel = connection.channel()
    while not stop.is_set():
        started = time.perf_counter()
        channel.basic_qos(prefetch_count=10)
        window[0].lags_ms.append((time.perf_counter() - started) * 1000)
        stop.wait(0.1)
    connection.close()


def stamped(extra: bytes = b"") -> bytes:
    return STAMP.pack(time.time()) + extra


def latency_ms(body: bytes) -> float:
    sent: float = STAMP.unpack_from(body)[0]
    return (time.time() - sent) * 1000


async def topology(url: str) -> None:
    connection = await aio_pika.connect(url)
    channel = await connection.channel()
    await channel.declare_queue("soak.classic", durable=True)
    await channel.declare_queue("soak.quorum", durable=True, arguments={"x-queue-type": "quorum"})
    dlx = await channel.declare_exchange("soak.dlx", aio_pika.ExchangeType.FANOUT, durable=True)
    dead = await channel.declare_queue("soak.dead", durable=True)
    await dead.bind(dlx)
    await channel.declare_queue(
        "soak.ttl", durable=True, arguments={"x-message-ttl": 200, "x-dead-letter-exchange": "soak.dlx"}
    )
    delayed = await channel.declare_exchange(
        "soak.delayed", "x-delayed-message", durable=True, arguments={"x-delayed-type": "direct"}
    )
    target = await channel.declare_queue("soak.delayed", durable=True)
    await target.bind(delayed, "later")
    await connection.close()


async def publisher(url: str, rate: int, window: list[Window], until: float) -> None:
    """``rate`` messages a second in rounds of 10 ms: classic, quorum, TTL and (1 in 10) delayed."""
    connection = await aio_pika.connect(url)
    channel = await connection.channel(publisher_confirms=True)
    delayed = await channel.get_exchange("soak.delayed")
    per_tick = max(1, rate // 100)
    inflight: set[asyncio.Future[Any]] = set()
    number = 0
    while time.monotonic() < until:
        tick = time.monotonic()
        for _ in range(per_tick):
            number += 1
            kind = number % 10
            if kind == 0:
                delay = 200 + number % 800
                message = aio_pika.Message(
                    stamped(STAMP.pack(delay / 1000)),
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    headers={"x-delay": delay},
                )
                # Not mandatory: a held message is routed nowhere at publish and would be returned at once.
                future: asyncio.Future[Any] = asyncio.ensure_future(
                    delayed.publish(message, "later", mandatory=False)
                )
                window[0].delayed += 1
            else:
                queue = ("soak.classic", "soak.quorum", "soak.ttl")[kind % 3]
                message = aio_pika.Message(stamped(), delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
                future = asyncio.ensure_future(channel.default_exchange.publish(message, queue))
            window[0].published += 1
            inflight.add(future)
            future.add_done_callback(lambda done: _confirmed(done, inflight, window))
        await asyncio.sleep(max(0.0, 0.01 - (time.monotonic() - tick)))
    await asyncio.gather(*inflight, return_exceptions=True)
    await connection.close()


def _confirmed(done: asyncio.Future[Any], inflight: set[asyncio.Future[Any]], window: list[Window]) -> None:
    inflight.discard(done)
    if done.cancelled() or done.exception() is not None:
        window[0].errors += 1
    else:
        window[0].confirmed += 1


async def consumer(url: str, queue_name: str, window: list[Window], until: float) -> None:
    connection = await aio_pika.connect(url)
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=100)
    queue = await channel.get_queue(queue_name)
    seen = 0
    async with queue.iterator() as messages:
        async for message in messages:
            seen += 1
            if queue_name != "soak.dead" and seen % 20 == 0 and not message.redelivered:
                await message.nack(requeue=True)  # a return: redelivered, and counted in the quorum queue
                continue
            body = message.body
            delay = STAMP.unpack_from(body, STAMP.size)[0] if queue_name == "soak.delayed" else 0.0
            if queue_name == "soak.dead":
                window[0].dead_lettered += 1
            else:
                window[0].latencies_ms.append(latency_ms(body) - delay * 1000)
            window[0].delivered += 1
            await message.ack()
            if time.monotonic() >= until:
                break
    await connection.close()


async def churn(url: str, window: list[Window], until: float) -> None:
    """One short-lived connection a second, with two channels, an exclusive queue and a few messages."""
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            connection = await aio_pika.connect(url)
            first = await connection.channel()
            second = await connection.channel()
            queue = await first.declare_queue(exclusive=True, arguments={"x-expires": 5000})
            for _ in range(5):
                await second.default_exchange.publish(aio_pika.Message(b"churn"), queue.name)
            for _ in range(5):
                got = await queue.get(timeout=5, fail=False)
                if got is not None:
                    await got.ack()
            await second.close()
            await connection.close()
            window[0].connections += 1
        except Exception:
            window[0].errors += 1
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))


QUEUES = ("soak.classic", "soak.quorum", "soak.ttl", "soak.dead", "soak.delayed")


async def reporter(broker: Broker, window: list[Window], until: float, out: Any, started: float) -> None:
    connection = await aio_pika.connect(broker.url)
    channel = await connection.channel()
    minute = 0
    while time.monotonic() < until:
        await asyncio.sleep(min(60.0, max(0.0, until - time.monotonic())))
        minute += 1
        seen, window[0] = window[0], Window()
        memory = broker.memory_mb()
        depths = {}
        for name in QUEUES:  # a growing backlog would grow RSS too: rule it in or out
            declared = await channel.declare_queue(name, passive=True)
            depths[name] = declared.declaration_result.message_count
        line = {
            "minute": minute,
            "elapsed_s": round(time.monotonic() - started),
            "rss_mb": memory.get("VmRSS", 0.0),
            "rss_anon_mb": memory.get("RssAnon", 0.0),
            "rss_file_mb": memory.get("RssFile", 0.0),
            "queue_depths": depths,
            "open_fds": broker.open_fds(),
            "lag_p50_ms": percentile(seen.lags_ms, 0.5),
            "lag_p99_ms": percentile(seen.lags_ms, 0.99),
            "lag_max_ms": round(max(seen.lags_ms), 2) if seen.lags_ms else None,
            "latency_p50_ms": percentile(seen.latencies_ms, 0.5),
            "latency_p99_ms": percentile(seen.latencies_ms, 0.99),
            "published": seen.published,
            "confirmed": seen.confirmed,
            "delivered": seen.delivered,
            "dead_lettered": seen.dead_lettered,
            "delayed": seen.delayed,
            "churned_connections": seen.connections,
            "errors": seen.errors,
            "load_average": round(os.getloadavg()[0], 2),
        }
        out.write(json.dumps(line) + "\n")
        out.flush()
        print(json.dumps(line), flush=True)
    await connection.close()


async def run(minutes: float, rate: int, out_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="warrenmq-soak-") as data_dir:
        broker = Broker(data_dir)
        window = [Window()]
        stop = threading.Event()
        lag_thread: threading.Thread | None = None
        try:
            await topology(broker.url)
            lag_thread = threading.Thread(target=probe, args=(broker.port, window, stop), daemon=True)
            lag_thread.start()
            started = time.monotonic()
            until = started + minutes * 60
            with out_path.open("w") as out:
                queues = ("soak.classic", "soak.quorum", "soak.dead", "soak.delayed")
                consumers = [
                    asyncio.ensure_future(consumer(broker.url, name, window, until)) for name in queues
                ]
                tasks = [
                    publisher(broker.url, rate, window, until),
                    churn(broker.url, window, until),
                    reporter(broker, window, until, out, started),
                ]
                await asyncio.wait_for(asyncio.gather(*tasks), timeout=minutes * 60 + 120)
                for task in consumers:  # a queue that went quiet leaves its consumer waiting
                    task.cancel()
                await asyncio.gather(*consumers, return_exceptions=True)
        finally:
            stop.set()
            if lag_thread is not None:
                lag_thread.join(timeout=5)
            broker.stop()


def summarize(out_path: Path) -> None:
    lines = [json.loads(line) for line in out_path.read_text().splitlines()]
    if len(lines) < 3:
        return
    later = lines[2:]
    for key in ("rss_mb", "open_fds", "lag_p99_ms", "latency_p99_ms"):
        values = [line[key] for line in later if line[key] is not None]
        if values:
            print(f"{key}: min {min(values)} median {statistics.median(values)} max {max(values)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=500, help="messages published per second")
    parser.add_argument("--out", type=Path, default=Path("soak.jsonl"))
    args = parser.parse_args()
    asyncio.run(run(args.minutes, args.rate, args.out))
    summarize(args.out)


if __name__ == "__main__":
    main()
