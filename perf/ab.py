"""A/B two WarrenMQ source trees (or one) under amqpperf: throughput and broker CPU per message.

On a shared machine throughput swings ±30% with other people's load, while the broker's own CPU time per
message (utime+stime of the broker process over the scenario, divided by the messages it moved) barely
moves: it is the figure to compare builds with. Each scenario runs on a freshly started broker, the trees
alternating within every round; the table shows best-of-N rate and median µs/msg, and their ratio B/A.

    python perf/ab.py --tree base=/tmp/base-tree --tree new=. --rounds 5 pubsub ack1 ack50 fanout
    python perf/ab.py --tree new=. --rounds 1 --py-spy /tmp/prof pubsub   # + a py-spy profile per run

``--serve-arg`` adds arguments to `warrenmq serve` (e.g. ``--serve-arg=--config-file=/tmp/off.conf``).
``--tree-env LABEL:VAR=VALUE`` sets an environment variable for one tree's brokers, so one tree can be its own
baseline: ``--tree wire=. --tree py=. --tree-env py:WARRENMQ_WIRE_NATIVE=0`` (the C wire loops against their
Python).
``--gc`` runs each broker with perf/gc_probe on its path: the cyclic collector's runs while it served and
their time are added to each run's line and to the table (CPU time of the whole run, start-up excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GC_PROBE = HERE / "gc_probe"
RUN = HERE / "run.sh"
# Messages a broker moves per scenario (run.sh's counts): published + delivered (+ acked messages).
MOVED = {
    "pub16": lambda d: d["count"],
    "pub1k": lambda d: d["count"],
    "pubsub": lambda d: d["received"],
    "pubsub-lat": lambda d: d["received"],
    "ack1": lambda d: d["received"],
    "ack50": lambda d: d["received"],
    "ack1p": lambda d: d["received"],
    "fanout": lambda d: d["count"],
    "fanout-lat": lambda d: d["count"],
    "topic": lambda d: d["count"],
    "confirm": lambda d: d["confirmed"],
    "confirm1": lambda d: d["confirmed"],
}
# Scenarios whose messages are persistent: the broker gets a fresh data directory (in its working directory)
# instead of ``--data-dir none``, so that it stores them and confirms after the commit, as compare.py runs it.
STORED = {"confirm", "confirm1", "ack1p"}
RATE = {"fanout": "deliveries_per_s"}


def _cpu_s(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _free(port: int) -> None:
    for _ in range(100):
        out = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=False
        ).stdout
        if not out.strip():
            return
        time.sleep(0.1)


def run_one(
    tree: str,
    scenario: str,
    port: int,
    serve_args: list[str],
    spy: Path | None,
    gc_out: Path | None = None,
    tree_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    paths = [tree, os.environ.get("AB_PYTHONPATH"), str(GC_PROBE) if gc_out is not None else None]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)), **(tree_env or {}))
    if gc_out is not None:
        gc_out.unlink(missing_ok=True)
        env["GCPROBE_OUT"] = str(gc_out)
    cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", str(port)]
    data_dir = "data" if scenario in STORED else "none"  # relative: inside the run's temporary cwd
    cmd += ["--log-level", "error", "--data-dir", data_dir, "--config-file", "none"]
    cmd += ["--management-port", "0", "--prometheus-port", "-1", *serve_args]
    with tempfile.TemporaryDirectory() as cwd:
        broker = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert broker.stdout is not None
        broker.stdout.readline()
        spy_proc = None
        try:
            if spy is not None:
                spy.mkdir(parents=True, exist_ok=True)
                out = spy / f"{scenario}-{Path(tree).name}-{int(time.time())}.txt"
                spy_proc = subprocess.Popen(
                    [
                        str(Path(sys.executable).parent / "py-spy"),
                        "record",
                        "--pid",
                        str(broker.pid),
                        "--rate",
                        "250",
                        "--format",
                        "raw",
                        "--output",
                        str(out),
                        "--nonblocking",
                        *os.environ.get("AB_SPY_ARGS", "").split(),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)
            before = _cpu_s(broker.pid)
            text = subprocess.run(
                ["bash", str(RUN), "127.0.0.1", str(port), scenario],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
                env=dict(os.environ, AMQPPERF_WORK=os.environ.get("AMQPPERF_WORK", "/tmp/amqpperf")),
            ).stdout
            after = _cpu_s(broker.pid)
            cpu = after[0] + after[1] - before[0] - before[1]
            system = after[1] - before[1]
        finally:
            if spy_proc is not None:
                spy_proc.send_signal(signal.SIGINT)
                spy_proc.wait(timeout=60)
            broker.send_signal(signal.SIGTERM)
            broker.wait(timeout=30)
            _free(port)
    lines = [line for line in text.splitlines() if line.startswith("{")]
    data = json.loads(lines[-1]) if lines else {"error": "no output"}
    data["broker_cpu_s"], data["broker_sys_s"] = cpu, system
    if gc_out is not None and gc_out.exists():
        probe = json.loads(gc_out.read_text().splitlines()[-1])
        data["gc_collections"], data["gc_s"] = probe["collections"], sum(probe["seconds"])
    moved = MOVED.get(scenario)
    if moved is not None and "error" not in data:
        data["cpu_us_per_msg"] = cpu / max(1, moved(data)) * 1e6
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--tree", action="append", required=True, help="LABEL=PATH of a source tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=5797)
    parser.add_argument("--serve-arg", action="append", default=[])
    parser.add_argument("--tree-env", action="append", default=[], help="LABEL:VAR=VALUE for one tree")
    parser.add_argument("--py-spy", type=Path, default=None, help="directory for py-spy raw profiles")
    parser.add_argument("--raw", type=Path, default=None, help="append raw JSON lines here")
    parser.add_argument("--gc", action="store_true", help="count the broker's garbage collections")
    args = parser.parse_args()
    gc_out = Path(tempfile.gettempdir()) / f"ab-gc-{os.getpid()}.jsonl" if args.gc else None
    trees = [tuple(item.split("=", 1)) for item in args.tree]
    tree_envs: dict[str, dict[str, str]] = {}
    for item in args.tree_env:
        label, _, assignment = item.partition(":")
        name, _, value = assignment.partition("=")
        tree_envs.setdefault(label, {})[name] = value
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for round_index in range(args.rounds):
        order = trees if round_index % 2 == 0 else trees[::-1]
        for scenario in args.scenarios:
            for label, path in order:
                data = run_one(
                    str(Path(path).resolve()),
                    scenario,
                    args.port,
                    args.serve_arg,
                    args.py_spy,
                    gc_out,
                    tree_envs.get(label),
                )
                data["tree"], data["round"] = label, round_index
                results.setdefault((scenario, label), []).append(data)
                if args.raw:
                    with args.raw.open("a") as raw:
                        raw.write(json.dumps(data) + "\n")
                rate = data.get(RATE.get(scenario, "rate"))
                print(
                    f"round {round_index + 1} {label:8} {scenario:10} rate {rate} "
                    f"cpu/msg {data.get('cpu_us_per_msg', float('nan')):.2f} µs "
                    f"(sys {data.get('broker_sys_s', 0):.2f} of "
                    f"{data.get('broker_cpu_s', 0):.2f} s) "
                    f"p50 {data.get('lat_us', {}).get('p50')} bg {data.get('bg_cpu')}"
                    + (f" gc {data.get('gc_collections')} {data.get('gc_s', 0) * 1e3:.0f} ms" * args.gc),
                    flush=True,
                )
    gc_head = (" median GC ms | GC share of CPU |", "---|---|") if args.gc else ("", "")
    head = "| Scenario | Tree | best rate | median rate | median broker CPU µs/msg | p50 µs (median) |"
    print(f"\n{head}{gc_head[0]}")
    print(f"|---|---|---|---|---|---|{gc_head[1]}")
    for (scenario, label), rows in results.items():
        rates = [r[RATE.get(scenario, "rate")] for r in rows if RATE.get(scenario, "rate") in r]
        cpus = [r["cpu_us_per_msg"] for r in rows if "cpu_us_per_msg" in r]
        p50s = [r["lat_us"]["p50"] for r in rows if r.get("lat_us")]
        gc_cells = ""
        if args.gc:
            gc_ms = [r["gc_s"] * 1e3 for r in rows if "gc_s" in r]
            shares = [r["gc_s"] / r["broker_cpu_s"] for r in rows if "gc_s" in r and r.get("broker_cpu_s")]
            gc_cells = (
                f" {statistics.median(gc_ms) if gc_ms else float('nan'):.0f} |"
                f" {statistics.median(shares) if shares else float('nan'):.1%} |"
            )
        print(
            f"| {scenario} | {label} | {max(rates, default=0):,.0f} | "
            f"{statistics.median(rates) if rates else 0:,.0f} | "
            f"{statistics.median(cpus) if cpus else float('nan'):.2f} | "
            f"{statistics.median(p50s) if p50s else float('nan'):,.0f} |{gc_cells}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
