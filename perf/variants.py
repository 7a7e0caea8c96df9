"""Compare WarrenMQ's mypyc-compiled build with its pure-Python variant (WARRENMQ_PURE=1) using amqpperf.

Both variants run from the same install, alternating within every round (the order swaps each round), each
scenario on a freshly started broker; the ready line's ``build`` proves which variant served. The table
reports the best of the rounds per variant (the machine is shared: the best run is the one least disturbed),
the compiled/pure ratio, and the broker's CPU time per published message (least of the rounds; less sensitive
to other load than a rate). Usage: `python perf/variants.py --rounds 3` (prints a Markdown table).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

from compare import METRICS, _amqpperf, _free, _warrenmq_cmd

SCENARIOS = ["pubsub", "ack1", "ack50", "fanout", "pub16", "topic"]
VARIANTS = {"mypyc": {}, "pure": {"WARRENMQ_PURE": "1"}}


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _cpu_s(pid: int) -> float:
    """The process's user + system CPU time so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(variant: str, scenario: str, port: int) -> tuple[float | None, float | None]:
    """(the scenario's figure, the broker's CPU µs per published message)."""
    env = {k: v for k, v in os.environ.items() if k != "WARRENMQ_PURE"} | VARIANTS[variant]
    # Management and Prometheus listen as by default, but on ephemeral ports (the machine is shared).
    env["WARRENMQ_PROMETHEUS_PORT"] = "0"
    with tempfile.TemporaryDirectory(prefix="warrenmq-perf-") as data_dir:
        command = [*_warrenmq_cmd(port, data_dir), "--management-port", "0"]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert process.stdout is not None
        try:
            ready = json.loads(process.stdout.readline())
            if ready.get("build") != variant:
                raise SystemExit(f"asked for {variant}, the broker runs {ready.get('build')!r}")
            cpu_before = _cpu_s(process.pid)
            result = _amqpperf(port, scenario, {**env, "BROKER_PID": str(process.pid)})
            cpu = _cpu_s(process.pid) - cpu_before
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
            _free(port)
    if "error" in result:
        return None, None
    value = METRICS[scenario][1](result)  # type: ignore[no-untyped-call]
    count = result.get("count")
    per_message = cpu * 1e6 / count if isinstance(count, int) and count else None
    return (float(value) if value is not None else None), per_message


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*", default=SCENARIOS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    port = _port()
    results: dict[str, dict[str, list[float]]] = {s: {v: [] for v in VARIANTS} for s in args.scenarios}
    cpu: dict[str, dict[str, list[float]]] = {s: {v: [] for v in VARIANTS} for s in args.scenarios}
    for round_ in range(args.rounds):
        order = list(VARIANTS) if round_ % 2 == 0 else list(reversed(VARIANTS))
        for scenario in args.scenarios:
            for variant in order:
                value, per_message = run(variant, scenario, port)
                if value is not None:
                    results[scenario][variant].append(value)
                if per_message is not None:
                    cpu[scenario][variant].append(per_message)
                line = {"round": round_, "scenario": scenario, "variant": variant, "value": value}
                print(json.dumps({**line, "cpu_us_per_msg": per_message}), file=sys.stderr, flush=True)
    print("| scenario | unit | mypyc (best) | pure (best) | mypyc / pure | broker CPU µs/msg, mypyc | pure |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for scenario, by_variant in results.items():
        label, _, unit, higher = METRICS[scenario]
        best = {v: (max if higher else min)(values) if values else None for v, values in by_variant.items()}
        compiled, pure = best["mypyc"], best["pure"]
        ratio = f"{compiled / pure:.2f}x" if compiled and pure else "n/a"
        cells = [f"{value:,.0f}" if value is not None else "n/a" for value in (compiled, pure)]
        least = [min(cpu[scenario][v]) if cpu[scenario][v] else None for v in VARIANTS]
        cpu_cells = [f"{value:.2f}" if value is not None else "n/a" for value in least]
        print(f"| {label} | {unit} | {cells[0]} | {cells[1]} | {ratio} | {cpu_cells[0]} | {cpu_cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
