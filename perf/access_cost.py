"""Measure what permission enforcement costs on the publish path: `warrenmq bench` against the broker as it is
("enforced") and against a copy of the same tree with the publish check cut out ("unenforced").

WarrenMQ has no switch to turn access control off (a broker that skips it would be a security hole), so the
unenforced broker is this source tree copied to a temporary directory with the two lines of
``ChannelSession._published`` that check the publish removed (the per-channel `DecisionCache` lookup and the
``check_publish`` call behind it); everything else is byte for byte the same. The user is guest, with ``.*``
permissions, so the enforced broker does the full ``authorize()`` once per channel and exchange and then one
dict lookup per message. Every run gets a freshly started broker (`--data-dir none`, management off); within
each round the two modes run back to back in alternating order, so drift on a shared machine hits both alike.
Besides the bench's rate (wall clock, at the mercy of other work on the machine) it reports the broker's CPU
time per message (user + system from /proc while the scenario runs), which load on other cores barely moves.
Both trees are copies taken at start, so editing the working tree cannot disturb a run. Usage:

    python perf/access_cost.py --rounds 10 pub16 pubsub
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSION = Path("broker/session/channel_session.py")
CHECK = (
    "        if access.publishable.get(exchange) != access.control.version:\n"
    "            check_publish(self, exchange, routing_key)\n"
)
MODES = ("enforced", "unenforced")
_SERVE_FLAGS = (
    "--log-level",
    "error",
    "--management-port",
    "-1",
    "--prometheus-port",
    "-1",
    "--data-dir",
    "none",
)
_HEADER = (
    "| Scenario | unenforced, best | enforced, best | cost (best) | unenforced, median | enforced, median |"
)


def copy_tree(enforced: bool) -> Path:
    """A copy of the source tree; unenforced, its publish path skips the permission check."""
    target = Path(tempfile.mkdtemp(prefix="wmq-enforced-" if enforced else "wmq-unenforced-"))
    for name in ("broker", "protocol"):
        shutil.copytree(ROOT / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    source = (target / SESSION).read_text()
    if source.count(CHECK) != 1:
        raise SystemExit(f"{SESSION} no longer has the publish check this script removes; update CHECK")
    if not enforced:
        (target / SESSION).write_text(source.replace(CHECK, ""))
    return target


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (/proc/<pid>/stat fields 14 and 15, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(tree: Path, scenario: str, out: Path, label: str) -> tuple[float, float] | None:
    """(msg/s, broker CPU µs per message) of one scenario on a fresh broker."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    broker = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0", *_SERVE_FLAGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tree,
        env=env,
    )
    assert broker.stdout is not None
    line = broker.stdout.readline()
    if not line:
        broker.wait(timeout=30)
        raise RuntimeError(f"broker exited with {broker.returncode} before reporting readiness")
    port = int(json.loads(line)["amqp_port"])
    try:
        url = f"amqp://guest:guest@127.0.0.1:{port}/"
        bench = [sys.executable, "-m", "broker", "bench", "--url", url, "--json", str(out), "--label", label]
        before = cpu_seconds(broker.pid)
        done = subprocess.run([*bench, scenario], env={**os.environ, "PYTHONPATH": str(tree)}, check=False)
        cpu = cpu_seconds(broker.pid) - before
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(timeout=60)
    if done.returncode != 0:
        return None
    row = [json.loads(row) for row in out.read_text().splitlines()][-1]
    return float(row["rate"]), cpu * 1e6 / int(row["params"]["count"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenarios", nargs="*", default=["pub16", "pubsub"])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path, default=Path(tempfile.mkdtemp()) / "access_cost.jsonl")
    args = parser.parse_args()
    trees = {"enforced": copy_tree(True), "unenforced": copy_tree(False)}
    rates: dict[str, dict[str, list[float]]] = {}
    cpus: dict[str, dict[str, list[float]]] = {}
    try:
        for round_index in range(args.rounds):
            for scenario in args.scenarios:
                order = MODES if round_index % 2 == 0 else MODES[::-1]
                for mode in order:
                    result = run_once(trees[mode], scenario, args.json, mode)
                    if result is not None:
                        rates.setdefault(scenario, {}).setdefault(mode, []).append(result[0])
                        cpus.setdefault(scenario, {}).setdefault(mode, []).append(result[1])
                    print(f"round {round_index + 1} {scenario} {mode}: {result}", flush=True)
    finally:
        for tree in trees.values():
            shutil.rmtree(tree, ignore_errors=True)
    print(_HEADER)
    print("|---|---|---|---|---|---|")
    for scenario, by_mode in rates.items():
        off, on = by_mode.get("unenforced", []), by_mode.get("enforced", [])
        if not off or not on:
            continue
        cost = (1 - max(on) / max(off)) * 100
        print(
            f"| {scenario} | {max(off):,.0f} | {max(on):,.0f} | {cost:.1f}% "
            f"| {statistics.median(off):,.0f} | {statistics.median(on):,.0f} |"
        )
    print()
    print(
        "| Scenario | unenforced, CPU µs/msg (median) | enforced | cost | unenforced (min) | enforced (min) |"
    )
    print("|---|---|---|---|---|---|")
    for scenario, by_mode in cpus.items():
        off, on = by_mode.get("unenforced", []), by_mode.get("enforced", [])
        if not off or not on:
            continue
        cost = (statistics.median(on) / statistics.median(off) - 1) * 100
        print(
            f"| {scenario} | {statistics.median(off):.2f} | {statistics.median(on):.2f} | {cost:.1f}% "
            f"| {min(off):.2f} | {min(on):.2f} |"
        )
    print(f"raw rows: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
