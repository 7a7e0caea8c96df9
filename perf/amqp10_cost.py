"""AMQP 1.0 publish → consume, WarrenMQ against RabbitMQ 4.0.5: rate and broker CPU per message.

Each round starts each broker afresh (their order alternating from round to round) and runs every scenario
on it, each on a fresh queue that is deleted afterwards. The load generator (``--client``) is by default
perf/amqp10_raw.py, sockets and protocol/amqp10's codec with pre-encoded transfers (2-5 µs of client CPU per
message); ``--client proton`` runs the same scenarios on python-qpid-proton's reactor (perf/amqp10_load.py,
which describes them), which costs the client 40-80 µs per message, as much as a broker. Per run it prints
the rate, bound by the client and the shared cores (the brokers and the client share them), and the
broker's CPU time per message: user + system of the broker's whole process tree from /proc over the run
(connections, links, every transfer and outcome, the closes), divided by the messages moved (consumed for
``pubsub``, accepted for ``publish``). Like perf/ab.py's figure, that one barely moves with a slow client
or other load on the machine; it is the one to compare. The table gives medians of ``--rounds``.

    python perf/amqp10_cost.py --rounds 3                   # both brokers, both scenarios, 50,000 messages
    python perf/amqp10_cost.py --brokers warrenmq --rounds 1 --messages 20000 pubsub
    python perf/amqp10_cost.py --client proton --rounds 1   # the same on python-qpid-proton

The brokers, alike in what they keep: WarrenMQ is ``python -m broker serve --profile rabbitmq-4.0 --data-dir
none`` (nothing on disk), RabbitMQ 4.0.5 the test suite's oracle container (tests/compat/rabbitmq4_node.py,
host network, its processes in this host's /proc under the container's init). On both the queue is a
classic queue declared over AMQP 0-9-1 with ``durable=false`` and the messages are sent with
``durable=false``, so neither broker writes them to disk on purpose. Both have their management plugin on,
as the differential tests run them. The oracle's image must exist (the test set-up makes it; this script
never builds it). ``--idle-s`` measures each broker's idle CPU before each run, reported beside the figures
(not subtracted), and each run's line says what the broker wrote to storage meanwhile (/proc/PID/io).
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
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pika

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from amqp10_load import SCENARIOS, LoadResult, run_load  # noqa: E402
from amqp10_raw import run_raw  # noqa: E402

from tests.compat.rabbitmq4_node import IMAGE, RabbitMQ4Node  # noqa: E402

WARRENMQ, RABBITMQ = "warrenmq", "rabbitmq"
LABELS = {WARRENMQ: "WarrenMQ", RABBITMQ: "RabbitMQ 4.0.5"}
TITLES = {"pubsub": "publish → consume, at least once", "publish": "publish only, accepted outcomes"}


def _tree(root: int) -> dict[int, tuple[str, int]]:
    """``root`` and every live descendant of it: PID -> (command name, user + system clock ticks)."""
    parents: dict[int, int] = {}
    found: dict[int, tuple[str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            head, tail = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)
        except OSError:
            continue  # exited meanwhile
        fields = tail.split()
        parents[int(entry)] = int(fields[1])
        found[int(entry)] = (head.split("(", 1)[1], int(fields[11]) + int(fields[12]))
    tree: dict[int, tuple[str, int]] = {}
    for pid, named in found.items():
        ancestor = pid
        while ancestor > 1 and ancestor != root:
            ancestor = parents.get(ancestor, 0)
        if ancestor == root:
            tree[pid] = named
    return tree


def tree_cpu_s(root: int) -> float:
    """User + system CPU seconds of ``root`` and every live descendant of it."""
    return sum(ticks for _, ticks in _tree(root).values()) / os.sysconf("SC_CLK_TCK")


def tree_written_bytes(root: int) -> int:
    """Octets the tree's live processes have caused to be written to storage (``write_bytes`` of
    /proc/PID/io): whether a broker wrote messages to disk."""
    total = 0
    for pid in _tree(root):
        try:
            lines = Path(f"/proc/{pid}/io").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in lines if line.startswith("write_bytes:"))
    return total


def tree_names(root: int) -> str:
    """The command names in ``root``'s tree (the run's log shows what was measured: beam.smp for RabbitMQ)."""
    return ", ".join(sorted({name for name, _ in _tree(root).values()}))


@contextmanager
def warrenmq() -> Iterator[tuple[int, int]]:
    """WarrenMQ from this tree under the 4.0 profile, in memory; yields (AMQP port, PID)."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0"]
    cmd += ["--profile", "rabbitmq-4.0", "--data-dir", "none", "--config-file", "none"]
    cmd += ["--log-level", "error", "--management-port", "0", "--prometheus-port", "-1"]
    with tempfile.TemporaryDirectory() as cwd:
        broker = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert broker.stdout is not None
        try:
            ready = json.loads(broker.stdout.readline())  # its first line: the readiness report
            # Whatever it prints later is read and dropped, so that a full pipe never blocks it mid-run.
            threading.Thread(target=broker.stdout.read, daemon=True).start()
            yield int(ready["amqp_port"]), broker.pid
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(timeout=60)


def _container_pid(container: str) -> int:
    done = subprocess.run(
        ["podman", "inspect", "--format", "{{.State.Pid}}", container],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout.strip())


@contextmanager
def rabbitmq() -> Iterator[tuple[int, int]]:
    """A fresh RabbitMQ 4.0.5 container; yields (AMQP port, PID of the container's init)."""
    if subprocess.run(["podman", "image", "exists", IMAGE], check=False).returncode != 0:
        raise SystemExit(f"no {IMAGE} image: run the AMQP 1.0 compat tests once, which build it")
    with tempfile.TemporaryDirectory() as base:
        node = RabbitMQ4Node(Path(base))
        node.start()
        try:
            yield node.port, _container_pid(node.container)
        finally:
            node.stop()


BROKERS = {WARRENMQ: warrenmq, RABBITMQ: rabbitmq}


def _queue(port: int, name: str, declare: bool) -> None:
    """Declare (or delete) the run's queue over AMQP 0-9-1: a classic queue, not durable."""
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
    try:
        channel = connection.channel()
        if declare:
            channel.queue_declare(name, durable=False)
        else:
            channel.queue_delete(name)
    finally:
        connection.close()


def _load(client: str, port: int, queue: str, scenario: str, args: argparse.Namespace) -> LoadResult:
    """One run of the load generator ``client``: raw (perf/amqp10_raw.py) or proton (perf/amqp10_load.py)."""
    flow = {"window": args.window, "credit": args.credit, "ack_batch": args.ack_batch}
    if client == "raw":
        return run_raw(port, queue, scenario, args.messages, **flow)
    return run_load(f"amqp://guest:guest@127.0.0.1:{port}", queue, scenario, args.messages, **flow)


def measure(port: int, pid: int, scenario: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run of ``scenario`` on a fresh queue, with the broker tree's CPU over it."""
    queue = f"amqp10-cost-{uuid.uuid4().hex[:8]}"
    _queue(port, queue, declare=True)
    idle_before = tree_cpu_s(pid)
    time.sleep(args.idle_s)  # not a wait on a condition: the span over which idle CPU is measured
    idle_us_per_s = (tree_cpu_s(pid) - idle_before) / args.idle_s * 1e6 if args.idle_s else 0.0
    load_before = os.getloadavg()[0]
    before, written_before = tree_cpu_s(pid), tree_written_bytes(pid)
    result = _load(args.client, port, queue, scenario, args)
    cpu_s = tree_cpu_s(pid) - before
    written = tree_written_bytes(pid) - written_before
    _queue(port, queue, declare=False)
    return {
        "scenario": scenario,
        "messages": args.messages,
        "moved": result.moved,
        "rate": result.rate,
        "seconds": result.seconds,
        "broker_cpu_s": cpu_s,
        "broker_written_bytes": written,
        "cpu_us_per_msg": cpu_s / max(1, result.moved) * 1e6,
        "idle_cpu_us_per_s": idle_us_per_s,
        "refused": result.refused,
        "error": result.error,
        "client": args.client,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def table(results: dict[tuple[str, str], list[dict[str, Any]]], brokers: list[str]) -> str:
    """Markdown: per scenario, the medians per broker and WarrenMQ / RabbitMQ."""
    head = "| Scenario |"
    for broker in brokers:
        head += f" {LABELS[broker]} msg/s | {LABELS[broker]} CPU µs/msg |"
    ratio = len(brokers) == 2
    if ratio:
        head += " rate WarrenMQ / RabbitMQ | CPU/msg RabbitMQ / WarrenMQ |"
    lines = [head, "|---|" + "---:|" * (head.count("|") - 2)]
    for scenario, title in TITLES.items():
        rows = {b: [r for r in results.get((scenario, b), []) if not r["error"]] for b in brokers}
        if not any(rows.values()):
            continue
        rate = {b: statistics.median(r["rate"] for r in rows[b]) if rows[b] else 0.0 for b in brokers}
        cpu = {
            b: statistics.median(r["cpu_us_per_msg"] for r in rows[b]) if rows[b] else 0.0 for b in brokers
        }
        line = f"| {title} |"
        for broker in brokers:
            line += f" {rate[broker]:,.0f} | {cpu[broker]:.1f} |"
        if ratio and all(rate.values()) and all(cpu.values()):
            line += (
                f" {rate[WARRENMQ] / rate[RABBITMQ]:.2f}\u00d7 | {cpu[RABBITMQ] / cpu[WARRENMQ]:.2f}\u00d7 |"
            )
        lines.append(line)
    return "\n".join(lines)


def _line(data: dict[str, Any]) -> str:
    return (
        f"round {data['round']} {LABELS[data['broker']]:14} {data['scenario']:8} {data['rate']:9,.0f} msg/s "
        f"cpu/msg {data['cpu_us_per_msg']:6.1f} µs (broker {data['broker_cpu_s']:.2f} s, "
        f"idle {data['idle_cpu_us_per_s'] / 1e4:.1f}% of a core, "
        f"wrote {data['broker_written_bytes'] >> 10} KiB) "
        f"load {data['load_before']:.1f}→{data['load_after']:.1f}"
        + (f" ERROR {data['error']}" if data["error"] else "")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS), help=" ".join(SCENARIOS))
    parser.add_argument(
        "--brokers", default=f"{WARRENMQ},{RABBITMQ}", help="warrenmq,rabbitmq (in round 1's order)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--client", choices=("raw", "proton"), default="raw", help="load generator (default raw)"
    )
    parser.add_argument("--messages", type=int, default=50_000, help="per run (default 50,000)")
    parser.add_argument("--window", type=int, default=1000, help="unsettled transfers (default 1000)")
    parser.add_argument("--credit", type=int, default=1000, help="the receiver's link credit (default 1000)")
    parser.add_argument("--ack-batch", type=int, default=100, help="deliveries per accepted (default 100)")
    parser.add_argument("--idle-s", type=float, default=2.0, help="idle span before a run (default 2)")
    parser.add_argument("--raw", type=Path, default=None, help="append each run as a JSON line here")
    args = parser.parse_args()
    brokers = args.brokers.split(",")
    unknown = [name for name in [*args.scenarios, *brokers] if name not in (*SCENARIOS, *BROKERS)]
    if unknown:
        parser.error(f"unknown scenario or broker: {', '.join(unknown)}")
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    print(f"client: {args.client}; {args.messages:,} messages per run", flush=True)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for round_index in range(args.rounds):
        for broker in brokers if round_index % 2 == 0 else brokers[::-1]:
            with BROKERS[broker]() as (port, pid):
                print(f"{LABELS[broker]}: the processes measured: {tree_names(pid)}", flush=True)
                for scenario in args.scenarios:
                    data = measure(port, pid, scenario, args)
                    data["broker"], data["round"] = broker, round_index + 1
                    results.setdefault((scenario, broker), []).append(data)
                    if args.raw is not None:
                        with args.raw.open("a") as raw:
                            raw.write(json.dumps(data) + "\n")
                    print(_line(data), flush=True)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print(table(results, brokers))
    return 1 if any(run["error"] for runs in results.values() for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
