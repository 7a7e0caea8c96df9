"""`warrenmq bench --plane-cost`: what the control and protection planes cost the hot path.

The same build is started twice per scenario and round on a fresh broker: "on" as it ships (RabbitMQ's
defaults: message statistics sampled every 5 s behind the management and prometheus listeners, permissions
enforced, the memory and disk alarms armed, tracing off) and "off" (`warrenmq serve --planes off`: no sampler,
no HTTP listeners, no alarm monitor, every permission granted). The two alternate within each round, so a
shared machine's drift hits both; the best run of each side is the least disturbed one and is compared.
The broker's own CPU time per message (user + system, from /proc, timers included) moves far less with
other people's load than a rate does, so it is reported too.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from broker.bench.scenarios import Result

SIDES = ("on", "off")


def start_broker(planes: str) -> tuple[subprocess.Popen[str], str]:
    """A broker of this build on an ephemeral port, in memory; returns it and its AMQP URL."""
    command = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0"]
    command += ["--data-dir", "none", "--config-file", "none", "--log-level", "error"]
    command += ["--management-port", "0", "--prometheus-port", "0", "--planes", planes]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("{"):
            ready = json.loads(line)
            if ready.get("event") == "ready":
                return process, f"amqp://guest:guest@127.0.0.1:{ready['amqp_port']}/"
    process.kill()
    process.wait()
    raise RuntimeError(f"broker (--planes {planes}) exited before it was ready")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (Linux /proc); 0.0 where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_broker(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def run(
    names: Sequence[str],
    rounds: int,
    measure: Callable[[str, str], Result],
    record: Callable[[dict[str, Any]], None],
) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, list[float]]]]:
    """``measure(name, url)`` runs one scenario; ``record`` gets every row. Returns name -> side -> rates, and
    name -> side -> broker CPU µs per message."""
    rates: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, list[float]]] = {}
    for round_index in range(rounds):
        sides = SIDES if round_index % 2 == 0 else SIDES[::-1]
        for name in names:
            for side in sides:
                process, url = start_broker(side)
                try:
                    before = cpu_seconds(process.pid)
                    result = measure(name, url)
                    used = cpu_seconds(process.pid) - before
                finally:
                    stop_broker(process)
                messages = int(result.params.get("count", 0)) or 1
                per_message = used / messages * 1e6
                rates.setdefault(name, {}).setdefault(side, []).append(result.rate)
                cpu.setdefault(name, {}).setdefault(side, []).append(per_message)
                record(
                    {
                        "name": name,
                        "planes": side,
                        "round": round_index,
                        "rate": result.rate,
                        "cpu_us_per_msg": round(per_message, 3),
                    }
                )
    return rates, cpu


def table(rates: dict[str, dict[str, list[float]]], cpu: dict[str, dict[str, list[float]]]) -> str:
    """Markdown: best rate of each side and the planes' cost against it; median broker CPU µs per message
    of each side and the planes' cost against that."""
    lines = [
        "| Scenario | off, best msg/s | on, best msg/s | cost (best) | off, CPU µs/msg | on, CPU µs/msg "
        "| cost (CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, sides in rates.items():
        off, on = sides.get("off", []), sides.get("on", [])
        off_cpu, on_cpu = cpu[name].get("off", []), cpu[name].get("on", [])
        if not off or not on:
            continue
        cost = (1 - max(on) / max(off)) * 100 if max(off) else float("nan")
        median_off, median_on = statistics.median(off_cpu), statistics.median(on_cpu)
        cpu_cost = (median_on / median_off - 1) * 100 if median_off else float("nan")
        lines.append(
            f"| {name} | {max(off):,.0f} | {max(on):,.0f} | {cost:+.1f}% | "
            f"{median_off:.2f} | {median_on:.2f} | {cpu_cost:+.1f}% |"
        )
    return "\n".join(lines)
