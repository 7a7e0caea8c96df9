"""Scale scenarios: tens of thousands of idle connections with heartbeats, 100,000 queues, 1,000,000 bindings.

Figures are the broker's RSS growth per object (``/proc``) and its CPU time per declared object over segments
of growing size (``psutil``), so that "linear in the count" reads as a per-item cost that does not grow.
Without the broker's ``pid`` only client-side wall times are reported.
"""

from __future__ import annotations

import multiprocessing
import resource
import time
from collections.abc import Callable, Sequence
from typing import Any

import psutil
from pamqp import commands

from broker.bench.client import Connection, parse_url
from broker.bench.scale_client import Plan, worker
from broker.bench.scenarios import Result
from broker.bench.workers import declare_nowait
from protocol.codec import make_method

# Sockets one client process may hold: its own descriptor limit, less a margin for the interpreter's files.
CLIENT_FD_MARGIN = 64
DECLARE_BATCH = 5_000


class BrokerProbe:
    """RSS, CPU time and descriptor use of the broker process (all zeros without a pid)."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid) if pid else None

    def rss(self) -> int:
        return int(self.process.memory_info().rss) if self.process is not None else 0

    def cpu_s(self) -> float:
        if self.process is None:
            return 0.0
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def fds(self) -> int:
        return int(self.process.num_fds()) if self.process is not None else 0

    def fd_limit(self) -> tuple[int, int]:
        if self.process is None:
            return (0, 0)
        soft, hard = self.process.rlimit(psutil.RLIMIT_NOFILE)
        return int(soft), int(hard)


def loopback_sources(count: int) -> list[str]:
    """127.0.0.2 … : every one is a separate source address for the kernel's ephemeral-port accounting."""
    return [f"127.0.{2 + i // 250}.{1 + i % 250}" for i in range(count)]


def _split(total: int, per_process: int) -> list[int]:
    workers = max(1, -(-total // per_process))
    base, extra = divmod(total, workers)
    return [base + (1 if i < extra else 0) for i in range(workers)]


def scale_conns(
    url: str,
    n: int = 20_000,
    heartbeat_s: int = 4,
    hold_s: float = 0.0,
    sources: int = 64,
    channels: int = 0,
    pid: int = 0,
    connect_timeout_s: float = 60.0,
) -> Result:
    """Hold ``n`` connections with heartbeats for ``hold_s`` (default: three heartbeat intervals) and check
    that the broker closed none and sent heartbeats on every one. A connection not open within
    ``connect_timeout_s`` (its handshake included) counts as failed.

    Clients run in as many processes as their own descriptor limit needs, each with its share of source
    addresses.
    """
    host, port, username, password, vhost = parse_url(url)
    hold_s = hold_s or 3.0 * heartbeat_s
    probe = BrokerProbe(pid)
    per_process = resource.getrlimit(resource.RLIMIT_NOFILE)[0] - CLIENT_FD_MARGIN
    counts = _split(n, min(per_process, 10_000))
    addresses = loopback_sources(max(sources, len(counts)))
    rss_before, fds_before = probe.rss(), probe.fds()
    context = multiprocessing.get_context("fork")
    pipes, processes = [], []
    for index, count in enumerate(counts):
        plan = Plan(
            host=host,
            port=port,
            sources=addresses[index :: len(counts)],
            count=count,
            heartbeat_s=heartbeat_s,
            username=username,
            password=password,
            vhost=vhost,
            channels=channels,
            connect_timeout_s=connect_timeout_s,
        )
        parent, child = context.Pipe()
        process = context.Process(target=worker, args=(plan, child), daemon=True)
        process.start()
        pipes.append(parent)
        processes.append(process)
    try:
        opened = [pipe.recv() for pipe in pipes]
        time.sleep(0.5)  # let the broker finish the last handshakes' bookkeeping before reading its RSS
        rss_after, fds_after = probe.rss(), probe.fds()
        for pipe in pipes:
            pipe.send("reset")
        for pipe in pipes:
            pipe.recv()
        cpu_before = probe.cpu_s()
        time.sleep(hold_s)  # real heartbeats take real time: the broker's timers run on its own clock
        cpu_hold = probe.cpu_s() - cpu_before
        for pipe in pipes:
            pipe.send("snapshot")
        held = [pipe.recv() for pipe in pipes]
        for pipe in pipes:
            pipe.send("close")
            pipe.recv()
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    total_opened = sum(part["opened"] for part in opened)
    open_s = max(part["open_s"] for part in opened)
    extra: dict[str, Any] = {
        "requested": n,
        "opened": total_opened,
        "open_after_hold": sum(part["open"] for part in held),
        "failed": _merge(part["failed"] for part in opened),
        "ended": _merge(part["ended"] for part in held),
        "heartbeats_min": min(part["heartbeats_min"] for part in held),
        "heartbeats_total": sum(part["heartbeats"] for part in held),
        "hold_s": hold_s,
        "heartbeat_s": heartbeat_s,
        "client_processes": len(counts),
        "open_s": round(open_s, 2),
    }
    if pid:
        extra.update(
            rss_before_mib=round(rss_before / 2**20, 1),
            rss_after_mib=round(rss_after / 2**20, 1),
            kib_per_conn=round((rss_after - rss_before) / 1024 / max(1, total_opened), 1),
            broker_fds=fds_after,
            broker_fds_idle=fds_before,
            broker_fd_limit=list(probe.fd_limit()),
            broker_cpu_pct_while_holding=round(100 * cpu_hold / hold_s, 1),
            broker_cpu_us_per_conn_per_s=round(1e6 * cpu_hold / hold_s / max(1, total_opened), 2),
        )
    return Result("scale-conns", {"conns": n, "heartbeat": heartbeat_s}, total_opened / open_s, extra=extra)


def _merge(parts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for key, value in part.items():
            out[key] = out.get(key, 0) + value
    return out


def timed_segments(
    sizes: Sequence[int], run: Callable[[int, int], None], probe: BrokerProbe
) -> list[dict[str, Any]]:
    """Grow from 0 through each of ``sizes``; ``run(start, stop)`` adds items start..stop-1. Each segment's
    cost per item: broker CPU µs (with a pid) and wall µs, plus the broker's RSS at its end."""
    rows = []
    done = 0
    for size in sizes:
        wall, cpu = time.monotonic(), probe.cpu_s()
        run(done, size)
        wall, cpu = time.monotonic() - wall, probe.cpu_s() - cpu
        items = size - done
        rows.append(
            {
                "size": size,
                "items": items,
                "wall_us_per_item": round(1e6 * wall / items, 2),
                "cpu_us_per_item": round(1e6 * cpu / items, 2),
                "rss_mib": round(probe.rss() / 2**20, 1),
            }
        )
        done = size
    return rows


def queue_name(index: int) -> str:
    return f"scale.q.{index:07d}"


def declare_queues(conn: Connection, start: int, stop: int) -> None:
    for low in range(start, stop, DECLARE_BATCH):
        methods = [
            make_method(commands.Queue.Declare, queue=queue_name(i), nowait=True, arguments={})
            for i in range(low, min(stop, low + DECLARE_BATCH))
        ]
        declare_nowait(conn, methods)


def bind_keys(conn: Connection, exchange: str, queues: int, start: int, stop: int) -> None:
    for low in range(start, stop, DECLARE_BATCH):
        methods = [
            make_method(
                commands.Queue.Bind,
                queue=queue_name(i % queues),
                exchange=exchange,
                routing_key=f"k.{i}",
                nowait=True,
                arguments={},
            )
            for i in range(low, min(stop, low + DECLARE_BATCH))
        ]
        declare_nowait(conn, methods)


def delete_queues(conn: Connection, count: int) -> None:
    for low in range(0, count, DECLARE_BATCH):
        methods = [
            make_method(commands.Queue.Delete, queue=queue_name(i), nowait=True)
            for i in range(low, min(count, low + DECLARE_BATCH))
        ]
        declare_nowait(conn, methods)


def scale_queues(
    url: str,
    sizes: Sequence[int] = (10_000, 30_000, 100_000),
    bindings: Sequence[int] = (100_000, 300_000, 1_000_000),
    exchange: str = "amq.direct",
    keep: bool = False,
    pid: int = 0,
) -> Result:
    """Declare queues up to each of ``sizes``, then bind keys to ``exchange`` up to each of ``bindings``
    (spread round robin over the queues); report the per-item cost of each segment and RSS per object."""
    probe = BrokerProbe(pid)
    conn = Connection(url)
    conn.open_channel(1)
    rss0 = probe.rss()
    started = time.monotonic()
    queues = timed_segments(sizes, lambda a, b: declare_queues(conn, a, b), probe)
    rss_queues = probe.rss()
    count = sizes[-1] if sizes else 0
    binds = (
        timed_segments(bindings, lambda a, b: bind_keys(conn, exchange, count, a, b), probe) if count else []
    )
    elapsed = time.monotonic() - started
    rss_binds = probe.rss()
    if not keep:
        delete_queues(conn, count)
    conn.close()
    extra: dict[str, Any] = {"queues": queues, "bindings": binds}
    if pid:
        extra["kib_per_queue"] = round((rss_queues - rss0) / 1024 / max(1, count), 2)
        if bindings:
            extra["bytes_per_binding"] = round((rss_binds - rss_queues) / max(1, bindings[-1]))
    bound = bindings[-1] if bindings else 0
    params: dict[str, Any] = {"queues": count, "bindings": bound, "exchange": exchange}
    return Result("scale-queues", params, (count + bound) / elapsed, extra=extra)
