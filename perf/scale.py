"""Scale benchmark: start a broker, hold N connections with heartbeats, declare queues and bind keys in
growing segments, then measure how long the broker stops serving AMQP while its statistics sampler ticks and
while management and Prometheus answer over that many queues. Prints a Markdown report and JSON.

    .venv/bin/python perf/scale.py                         # 20,000 conns, 100,000 queues, 1,000,000 bindings
    .venv/bin/python perf/scale.py --conns 2000 --queues 1000,10000 --bindings 10000,100000   # quick

Figures: the broker's RSS growth per object (/proc) and its CPU time per declared object in each segment
(psutil), so that "linear" reads as a per-item cost that stays flat; stalls are the longest AMQP round trip
(basic.qos on an open channel) seen by a probe polling every 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

import psutil
import requests
from pamqp import commands

from broker.bench.client import Connection
from broker.bench.scale import scale_conns, scale_queues

AUTH = ("guest", "guest")


def start_broker(heartbeat: int) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0"]
    cmd += ["--management-port", "0", "--prometheus-port", "0", "--data-dir", "none"]
    cmd += ["--heartbeat", str(heartbeat), "--log-level", "warning", "--config-file", "none"]
    env = {**os.environ, "WARRENMQ_SYS_PREFIX": "/nonexistent/warrenmq-scale"}  # no enabled_plugins: all on
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


def stop_broker(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Probe:
    """A thread doing AMQP round trips on its own connection; ``worst()`` is the longest since ``reset()``."""

    def __init__(self, url: str) -> None:
        self.conn = Connection(url, timeout_s=300)
        self.conn.open_channel(1)
        self.times: list[float] = []
        self.inflight_since = 0.0  # when the round trip now in flight began (0: none)
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            started = self.inflight_since = time.monotonic()
            self.conn.rpc(1, commands.Basic.Qos(prefetch_count=0), commands.Basic.QosOk)
            self.inflight_since = 0.0
            self.times.append(time.monotonic() - started)
            time.sleep(0.005)

    def reset(self) -> None:
        self.times = []

    def worst_ms(self) -> float:
        """The longest round trip since ``reset()``, counting one still in flight."""
        since = self.inflight_since
        pending = time.monotonic() - since if since else 0.0
        return round(1000 * max([*self.times, pending]), 1)

    def stop(self) -> None:
        self._stop = True
        self._thread.join(timeout=60)
        self.conn.close()


def responsiveness(url: str, management: int, prometheus: int, pid: int, idle_s: float) -> dict[str, Any]:
    probe = Probe(url)
    out: dict[str, Any] = {}
    try:
        cpu = psutil.Process(pid).cpu_times()
        time.sleep(idle_s)  # two statistics sampler ticks (5 s each) over every queue
        after = psutil.Process(pid).cpu_times()
        out["idle"] = {
            "seconds": idle_s,
            "max_stall_ms": probe.worst_ms(),
            "broker_cpu_pct": round(100 * (after.user + after.system - cpu.user - cpu.system) / idle_s, 1),
            "rss": psutil.Process(pid).memory_info().rss,  # before the listings below allocate
        }
        targets = [
            ("GET /api/overview", f"http://127.0.0.1:{management}/api/overview"),
            (
                "GET /api/queues?page=1&page_size=100",
                f"http://127.0.0.1:{management}/api/queues?page=1&page_size=100",
            ),
            (
                "GET /api/queues?page=1&page_size=100&sort=messages",
                f"http://127.0.0.1:{management}/api/queues?page=1&page_size=100&sort=messages",
            ),
            ("GET /api/queues (every row)", f"http://127.0.0.1:{management}/api/queues"),
            ("GET /metrics (Prometheus, aggregated)", f"http://127.0.0.1:{prometheus}/metrics"),
        ]
        for label, address in targets:
            probe.reset()
            started = time.monotonic()
            body = requests.get(address, auth=AUTH, timeout=600).content
            out[label] = {
                "seconds": round(time.monotonic() - started, 2),
                "bytes": len(body),
                "max_stall_ms": probe.worst_ms(),
            }
    finally:
        probe.stop()
    return out


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


def report(conns: dict[str, Any], queues: dict[str, Any], stalls: dict[str, Any], rss: dict[str, Any]) -> str:
    lines = [
        "| Connections | opened | open after hold | heartbeats received (min) | RSS per connection "
        "| broker CPU holding |"
    ]
    lines.append("|---|---|---|---|---|---|")
    lines.append(
        f"| {conns['requested']:,} (heartbeat {conns['heartbeat_s']} s, hold {conns['hold_s']:.0f} s) "
        f"| {conns['opened']:,} | {conns['open_after_hold']:,} | {conns['heartbeats_min']} "
        f"| {conns.get('kib_per_conn', '?')} KiB | {conns.get('broker_cpu_pct_while_holding', '?')}% "
        f"({conns.get('broker_cpu_us_per_conn_per_s', '?')} µs per connection per s) |"
    )
    lines += [
        "",
        "| Segment | items | broker CPU µs/item | client wall µs/item | RSS at end |",
        "|---|---|---|---|---|",
    ]
    for kind in ("queues", "bindings"):
        previous = 0
        for row in queues[kind]:
            lines.append(
                f"| {kind} {previous:,} → {row['size']:,} | {row['items']:,} | {row['cpu_us_per_item']} "
                f"| {row['wall_us_per_item']} | {row['rss_mib']} MiB |"
            )
            previous = row["size"]
    lines += [
        "",
        f"RSS per queue {queues.get('kib_per_queue')} KiB at declaration, "
        f"{rss['kib_per_queue_sampled']} KiB after {rss['sampler_ticks']} statistics ticks; "
        f"{queues.get('bytes_per_binding')} bytes per binding.",
        "",
    ]
    lines += ["| With every queue held | took | longest AMQP stall |", "|---|---|---|"]
    for name, row in stalls.items():
        label = name
        took = f"{row['seconds']} s" + (f" ({row['bytes']:,} B)" if "bytes" in row else "")
        if label == "idle":
            label, took = (
                f"idle (sampler ticking; broker CPU {row['broker_cpu_pct']}%)",
                f"{row['seconds']} s",
            )
        lines.append(f"| {label} | {took} | {row['max_stall_ms']} ms |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conns", type=int, default=20_000)
    parser.add_argument("--heartbeat", type=int, default=4)
    parser.add_argument("--queues", default="10000,30000,100000")
    parser.add_argument("--bindings", default="100000,300000,1000000")
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args()
    # One fresh broker for the connections and another for the queues: each part's RSS growth is its own,
    # not memory the other freed and the allocator reused.
    process, ready = start_broker(args.heartbeat)
    try:
        url = f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/"
        conns = scale_conns(url, n=args.conns, heartbeat_s=args.heartbeat, pid=process.pid).extra
    finally:
        stop_broker(process)
    process, ready = start_broker(args.heartbeat)
    try:
        url = f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/"
        queues = scale_queues(
            url, sizes=_sizes(args.queues), bindings=_sizes(args.bindings), keep=True, pid=process.pid
        ).extra
        rss_declared = psutil.Process(process.pid).memory_info().rss
        stalls = responsiveness(url, ready["management_port"], ready["prometheus_port"], process.pid, 11.0)
        grown = stalls["idle"].pop("rss") - rss_declared
        rss = {
            "sampler_ticks": 2,
            "kib_per_queue_sampled": round(
                queues["kib_per_queue"] + grown / 1024 / _sizes(args.queues)[-1], 2
            ),
        }
    finally:
        stop_broker(process)
    print(report(conns, queues, stalls, rss))
    if args.json_path:
        with open(args.json_path, "w") as out:
            json.dump(
                {"connections": conns, "declare": queues, "responsiveness": stalls, "rss": rss}, out, indent=1
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
