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
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUN = HERE / "run.sh"
MODES = ("off", "compact", "full")


def _free(port: int) -> None:
    for _ in range(100):
        out = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=False
        ).stdout
        if not out.strip():
            return
        time.sleep(0.1)


def _broker_cmd(port: int, mode: str, journal_dir: str, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--log-level", "error", "--management-port", "-1"]
    if mode != "off":
        cmd += ["--journal-dir", journal_dir, "--journal-mode", mode, *extra]
    return cmd


def run_once(scenario: str, mode: str, port: int, extra: list[str]) -> dict[str, object]:
    journal_dir = tempfile.mkdtemp(prefix="wmq-journal-")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        _broker_cmd(port, mode, journal_dir, extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert process.stdout is not None
    process.stdout.readline()  # the readiness line
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
        _free(port)
    data["journal_files"] = sum(
        1 for path in Path(journal_dir).rglob("*") if path.suffix in (".parquet", ".jsonl")
    )
    shutil.rmtree(journal_dir, ignore_errors=True)
    return data


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenarios", nargs="*", default=["pub16", "pubsub", "ack1"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--port", type=int, default=5699)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, from off,compact,full")
    parser.add_argument("--raw", type=Path, default=None, help="append every raw JSON result here")
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
                data = run_once(scenario, mode, args.port, args.journal_arg)
                data["mode"], data["round"] = mode, round_index
                if args.raw:
                    with args.raw.open("a") as raw:
                        raw.write(json.dumps(data) + "\n")
                rate = data.get("rate")
                if not isinstance(rate, int | float) or not rate:
                    print(f"{scenario} {mode}: no figure ({data.get('error', data)})", file=sys.stderr)
                    continue
                results.setdefault(scenario, {}).setdefault(mode, []).append(float(rate))
                print(f"round {round_index + 1} {scenario:8} {mode:8} {rate:>10,.0f} msg/s", flush=True)
    print()
    print(
        "| scenario | "
        + " | ".join(f"{m} (median msg/s)" for m in modes)
        + " | "
        + " | ".join(f"{m} loss" for m in modes if m != "off")
        + " |"
    )
    for scenario, by_mode in results.items():
        medians = {m: statistics.median(v) for m, v in by_mode.items() if v}
        cells = [f"{medians[m]:,.0f}" if m in medians else "-" for m in modes]
        base = medians.get("off")
        losses = [
            f"{(1 - medians[m] / base) * 100:.1f}%" if base and m in medians else "-"
            for m in modes
            if m != "off"
        ]
        print(f"| {scenario} | " + " | ".join(cells) + " | " + " | ".join(losses) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
