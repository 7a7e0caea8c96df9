"""`warrenmq bench --plane-cost`: what the control and protection planes cost the hot path.

The same build is started twice per scenario and round on a fresh broker: "on" as it ships (RabbitMQ's
defaults: message statistics sampled every 5 s behind the management and prometheus listeners, permissions
enforced, the memory and disk alarms armed, tracing off) and "off" (`warrenmq serve --planes off`: no sampler,
no HTTP listeners, no alarm monitor, every permission granted). The two alternate within each round, so a
shared machine's drift hits both; the best run of each side is the least disturbed one and is compared.
"""

from __future__ import annotations

import json
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
) -> dict[str, dict[str, list[float]]]:
    """``measure(name, url)`` runs one scenario; ``record`` gets every row. Returns name -> side -> rates."""
    rates: dict[str, dict[str, list[float]]] = {}
    for round_index in range(rounds):
        sides = SIDES if round_index % 2 == 0 else SIDES[::-1]
        for name in names:
            for side in sides:
                process, url = start_broker(side)
                try:
                    result = measure(name, url)
                finally:
                    stop_broker(process)
                rates.setdefault(name, {}).setdefault(side, []).append(result.rate)
                record({"name": name, "planes": side, "round": round_index, "rate": result.rate})
    return rates


def table(rates: dict[str, dict[str, list[float]]]) -> str:
    """Markdown: best and median rate of each side, and the cost of the planes (best against best)."""
    lines = [
        "| Scenario | planes off, best | planes on, best | cost (best) | off, median | on, median |",
        "|---|---|---|---|---|---|",
    ]
    for name, sides in rates.items():
        off, on = sides.get("off", []), sides.get("on", [])
        if not off or not on:
            continue
        cost = (1 - max(on) / max(off)) * 100 if max(off) else float("nan")
        lines.append(
            f"| {name} | {max(off):,.0f} | {max(on):,.0f} | {cost:+.1f}% | "
            f"{statistics.median(off):,.0f} | {statistics.median(on):,.0f} |"
        )
    return "\n".join(lines)
