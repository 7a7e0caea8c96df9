"""A connection storm against one or more WarrenMQ source trees: N clients (raw asyncio handshakes from
``broker.bench.scale``, 200 in flight per client process) connect at once, hold with heartbeats, then all
leave. Reports how many the broker opened (its descriptor limit caps it), how the others failed, how long
opening took, and how long (and how much broker CPU) closing them all took: the time in which a new client
waits.

    .venv/bin/python benchmarks/connection_storm.py --tree new=.
    .venv/bin/python benchmarks/connection_storm.py --tree base=/tmp/base --tree new=. --hog 1 --rounds 2

``--hog K`` runs K busy-loop processes meanwhile (a loaded CI machine). Each tree's broker is started from
that tree (PYTHONPATH and working directory), with its built extensions if it has them.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time
from typing import Any

import psutil

from broker.bench.scale import scale_conns


def _hog() -> None:
    while True:
        pass


def start_broker(tree: str, heartbeat_s: int) -> tuple[subprocess.Popen[str], str]:
    cmd = [
        sys.executable,
        "-m",
        "broker",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--data-dir",
        "none",
    ]
    cmd += ["--management-port", "-1", "--prometheus-port", "-1", "--config-file", "none"]
    cmd += ["--heartbeat", str(heartbeat_s), "--log-level", "warning"]
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=tree)
    assert process.stdout is not None
    try:
        ready = json.loads(process.stdout.readline())
    except BaseException:
        process.kill()
        raise
    return process, f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/"


def storm(tree: str, conns: int, heartbeat_s: int) -> dict[str, Any]:
    process, url = start_broker(tree, heartbeat_s)
    try:
        broker = psutil.Process(process.pid)
        idle_fds = broker.num_fds()
        result = scale_conns(url, n=conns, heartbeat_s=heartbeat_s, hold_s=2.0 * heartbeat_s, pid=process.pid)
        # The clients have closed their sockets: until the broker has closed its ends, a new client waits.
        started, cpu = time.monotonic(), sum(broker.cpu_times()[:2])
        while broker.num_fds() > idle_fds + 16 and time.monotonic() - started < 600:
            time.sleep(0.05)  # another process's descriptors: nothing to wait on but polling
        close_s = time.monotonic() - started
        close_cpu_s = sum(broker.cpu_times()[:2]) - cpu
    finally:
        process.terminate()
        process.wait(timeout=60)
    extra = result.extra
    return {
        "opened": extra["opened"],
        "capacity": min(conns, extra["broker_fd_limit"][1] - idle_fds),
        "failed": extra["failed"],
        "open_s": extra["open_s"],
        "close_s": round(close_s, 1),
        "close_cpu_s": round(close_cpu_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tree", action="append", default=[], help="LABEL=PATH (repeatable; default new=.)")
    parser.add_argument("--conns", type=int, default=20_000)
    parser.add_argument("--heartbeat", type=int, default=2)
    parser.add_argument("--hog", type=int, default=0, help="busy-loop processes running meanwhile")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    trees = [tree.split("=", 1) for tree in args.tree or ["new=."]]
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hog)]
    for hog in hogs:
        hog.start()
    rows = []
    try:
        for round_number in range(args.rounds):
            for label, path in trees:  # alternated, so that both see the same minutes of the machine
                row = {"tree": label, "round": round_number + 1, **storm(path, args.conns, args.heartbeat)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        for hog in hogs:
            hog.kill()
    print(f"\n{args.conns:,} clients, heartbeat {args.heartbeat} s, {args.hog} busy-loop process(es)\n")
    print("| tree | round | opened / capacity | failed | open s | close s | broker CPU closing s |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        failed = ", ".join(f"{reason}: {count}" for reason, count in sorted(row["failed"].items())) or "-"
        print(
            f"| {row['tree']} | {row['round']} | {row['opened']:,} / {row['capacity']:,} | {failed} "
            f"| {row['open_s']} | {row['close_s']} | {row['close_cpu_s']} |"
        )


if __name__ == "__main__":
    main()
