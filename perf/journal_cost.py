"""Measure what the event journal costs: the same amqpperf scenarios with the journal off, compact and full.

Every (scenario, mode) run gets a freshly started broker and an empty journal directory; within each round the
three modes run back to back in a rotating order, so slow drift on a shared machine hits them alike. The table
reports per-mode medians over rounds and the loss against "off". Needs amqpperf (perf/run.sh builds it; needs
librabbitmq-dev). Usage:

    python perf/journal_cost.py --rounds 5 pub16 pubsub ack1

The broker runs from this file's source tree (cwd and PYTHONPATH), so a copy of the tree can be measured while
the working tree is being edited.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUN = HERE / "run.sh"
MODES = ("off", "compact", "full")


def _broker_cmd(port: int, mode: str, journal_dir: str, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", str(port)]
    # No store: the scenarios are transient, and brokers started from the tree must not share ./warrenmq-data.
    cmd += ["--log-level", "error", "--management-port", "-1", "--data-dir", "none"]
    if mode != "off":
        cmd += ["--journal-dir", journal_dir, "--journal-mode", mode, *extra]
    return cmd


def run_once(scenario: str, mode: str, extra: list[str]) -> dict[str, object]:
    journal_dir = tempfile.mkdtemp(prefix="wmq-journal-")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Port 0: the broker picks a free port and reports it, so a broker someone else left on a fixed port
    # cannot silently take the traffic.
    process = subprocess.Popen(
        _broker_cmd(0, mode, journal_dir, extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait(timeout=30)
        raise RuntimeError(f"broker exited with {process.returncode} before reporting readiness")
    port = int(json.loads(line)["amqp_port"])
    try:
        out = subprocess.run(
            ["bash", str(RUN), "127.0.0.1", str(port), scenario],
            capture_output=True,
            text=True,
            env={**env, "BROKER_PID": str(process.pid)},
            timeout=300,
            check=False,
        ).stdout
        lines = [line for line in out.splitlines() if line.startswith("{")]
        data: dict[str, object] = json.loads(lines[-1]) if lines else {"error": "no output"}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    files = [path for path in Path(journal_dir).rglob("*") if path.suffix in (".parquet", ".jsonl")]
    data["journal_files"] = len(files)
    if mode != "off" and not files:
        data["error"] = "the journal wrote no file"
    shutil.rmtree(journal_dir, ignore_errors=True)
    return data


LABELS = {"pub16": "publish-only, 16 B", "pubsub": "publish → consume, autoack", "ack1": "manual ack each"}


def render(results: dict[str, dict[str, list[float]]], modes: list[str], rounds: int, argv: list[str]) -> str:
    """A Markdown report: medians and loss against "off" per scenario, then every round's figure."""
    journaled = [m for m in modes if m != "off"]
    with open("/proc/cpuinfo") as cpuinfo:
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    lines = [
        "# Journal cost: amqpperf with the journal off, compact and full",
        "",
        f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} cores ({cpu}),",
        f"Python {platform.python_version()}; broker and generator share the cores. Each run is a freshly",
        "started broker (`warrenmq serve`, Parquet journal in a new directory); the modes alternate in a",
        f"rotating order within each of {rounds} round(s). Figures are amqpperf's `rate` in msg/s, medians",
        "over rounds; loss is against the median with the journal off.",
        "",
        "| Scenario | " + " | ".join(modes) + " | " + " | ".join(f"{m} loss" for m in journaled) + " |",
        "|---" * (len(modes) + len(journaled) + 1) + "|",
    ]
    for scenario, by_mode in results.items():
        medians = {m: statistics.median(v) for m, v in by_mode.items() if v}
        base = medians.get("off")
        cells = [f"{medians[m]:,.0f}" if m in medians else "-" for m in modes]
        losses = [
            f"{(1 - medians[m] / base) * 100:.1f}%" if base and m in medians else "-" for m in journaled
        ]
        lines.append(f"| {LABELS.get(scenario, scenario)} | " + " | ".join(cells + losses) + " |")
    header = " | ".join(str(index) for index in range(1, rounds + 1))
    lines += ["", "Every round (msg/s):", "", f"| Scenario | Mode | {header} |"]
    lines.append("|---|---|" + "---|" * rounds)
    for scenario, by_mode in results.items():
        for mode in modes:
            figures = [f"{value:,.0f}" for value in by_mode.get(mode, [])]
            lines.append(f"| {scenario} | {mode} | " + " | ".join(figures) + " |")
    command = f"python perf/journal_cost.py {' '.join(argv)}".rstrip()
    lines += ["", "Reproduce (needs librabbitmq-dev for amqpperf):", "", "```sh", command, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenarios", nargs="*", default=["pub16", "pubsub", "ack1"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, from off,compact,full")
    parser.add_argument("--raw", type=Path, default=None, help="append every raw JSON result here")
    parser.add_argument("--output", type=Path, default=None, help="write the Markdown report here")
    parser.add_argument(
        "--journal-arg", action="append", default=[], help="extra serve flag for journal runs"
    )
    args = parser.parse_args()
    modes = args.modes.split(",")
    results: dict[str, dict[str, list[float]]] = {}
    for round_index in range(args.rounds):
        for scenario in args.scenarios:
            shift = round_index % len(modes)
            for mode in modes[shift:] + modes[:shift]:
                data = run_once(scenario, mode, args.journal_arg)
                data["mode"], data["round"] = mode, round_index
                if args.raw:
                    with args.raw.open("a") as raw:
                        raw.write(json.dumps(data) + "\n")
                rate = data.get("rate")
                if data.get("error") or not isinstance(rate, int | float) or not rate:
                    print(f"{scenario} {mode}: no figure ({data.get('error', data)})", file=sys.stderr)
                    continue
                results.setdefault(scenario, {}).setdefault(mode, []).append(float(rate))
                busy = data.get("bg_cpu")
                print(
                    f"round {round_index + 1} {scenario:8} {mode:8} {rate:>10,.0f} msg/s, others {busy} cpu",
                    flush=True,
                )
    report = render(results, modes, args.rounds, sys.argv[1:])
    print(report)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
