"""Startup benchmark (not a test): how soon a client can use WarrenMQ.

- process: `python -m broker serve --port 0` spawned → readiness line read → first AMQP handshake completed
  (connection.open-ok received), measured from just before the spawn.
- in-process: `EmbeddedBroker().start()` on a running loop → first handshake completed on it; and
  `BrokerThread().start()` (thread + its own loop) for the sync flavour.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/startup.py [--runs N]
Targets (issue #6): process ≤ 0.2 s, in-process ≤ 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

from broker.healthcheck import check
from broker.testing import BrokerThread, EmbeddedBroker


def process_start() -> tuple[float, float]:
    began = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--management-port",
            "-1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        ready_at = time.perf_counter() - began
        check(f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/")
        return ready_at, time.perf_counter() - began
    finally:
        proc.terminate()
        proc.wait()


async def in_process_start() -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    began = time.perf_counter()
    broker = await EmbeddedBroker(record_history=False).start()
    started = time.perf_counter() - began
    # The blocking handshake client runs in a worker thread while this loop serves it.
    await loop.run_in_executor(None, check, broker.url)
    handshake = time.perf_counter() - began
    await broker.stop()
    return started, handshake


def thread_start() -> float:
    began = time.perf_counter()
    broker = BrokerThread().start()
    check(broker.url)
    elapsed = time.perf_counter() - began
    broker.stop()
    return elapsed


def _summary(name: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"{name:<46} median {statistics.median(ms):7.1f} ms   min {ms[0]:7.1f}   max {ms[-1]:7.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    ready, handshake = zip(*(process_start() for _ in range(runs)), strict=True)
    print(_summary("process: spawn -> readiness line", list(ready)))
    print(_summary("process: spawn -> first handshake done", list(handshake)))
    embedded = [asyncio.run(in_process_start()) for _ in range(runs)]
    print(_summary("in-process EmbeddedBroker.start()", [e[0] for e in embedded]))
    print(_summary("in-process start -> first handshake done", [e[1] for e in embedded]))
    print(_summary("BrokerThread start -> first handshake done", [thread_start() for _ in range(runs)]))


if __name__ == "__main__":
    main()
