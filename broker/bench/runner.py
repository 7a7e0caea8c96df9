"""`warrenmq bench`: run scenarios against any AMQP URL and print a table plus JSON lines."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from broker.bench import plane_cost, scale, scenarios
from broker.bench.scenarios import Result

# name -> (callable, default keyword arguments). Counts scale with --scale; names follow amqpperf's.
SCENARIOS: dict[str, tuple[Callable[..., Result], dict[str, Any]]] = {
    "pub16": (scenarios.publish_only, {"size": 16, "count": 300_000}),
    "pub1k": (scenarios.publish_only, {"size": 1024, "count": 200_000}),
    "pubsub": (scenarios.pubsub, {"size": 16, "count": 300_000, "ack": "none"}),
    "pubsub-lat": (scenarios.pubsub, {"size": 16, "count": 30_000, "ack": "none", "rate": 10_000}),
    "ack1": (scenarios.pubsub, {"size": 16, "count": 200_000, "ack": "each", "prefetch": 100}),
    "ack50": (
        scenarios.pubsub,
        {"size": 16, "count": 200_000, "ack": "multi", "prefetch": 100, "multi_every": 50},
    ),
    "fanout": (scenarios.fanout, {"size": 16, "count": 30_000, "queues": 10}),
    "topic": (scenarios.topic, {"count": 3_000, "bindings": 10_000, "queues": 10, "keys": 1_000}),
    "confirm": (scenarios.confirm, {"size": 1024, "count": 100_000, "window": 1000}),
    "confirm1": (scenarios.confirm, {"size": 1024, "count": 300, "window": 1}),
    "conns": (scenarios.conns, {"n": 1_000}),
    # In-process: field-table decoding from 1 KB to 1 MB, the cost per KB at 1 MB over that at 1 KB.
    "decode": (scenarios.decode, {"count": 1}),
    # Scale (perf/scale.py runs both on fresh brokers): connections with heartbeats from client processes,
    # queues and bindings declared by segments.
    "scale-conns": (scale.scale_conns, {"n": 20_000, "heartbeat_s": 4}),
    "scale-queues": (scale.scale_queues, {}),
}
DEFAULT = [
    "pub16",
    "pub1k",
    "pubsub",
    "pubsub-lat",
    "ack1",
    "ack50",
    "fanout",
    "topic",
    "confirm",
    "confirm1",
]
_COUNTED = ("count", "n")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="warrenmq bench")
    parser.add_argument(
        "scenarios", nargs="*", help=f"from {', '.join(SCENARIOS)} (default: {' '.join(DEFAULT)})"
    )
    parser.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672/", help="broker to measure")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply message counts")
    parser.add_argument("--pid", type=int, default=0, help="broker pid, for the RSS figures of 'conns'")
    parser.add_argument(
        "--json", dest="json_path", help="also append one JSON line per scenario to this file"
    )
    parser.add_argument("--label", default="", help="free text copied into every JSON line")
    parser.add_argument(
        "--plane-cost",
        action="store_true",
        help="ignore --url: start this build with its planes on (statistics, permissions, alarms; tracing "
        "off) and with --planes off, alternating on fresh brokers, and print what the planes cost",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --plane-cost (default 5)")
    return parser


def run(args: argparse.Namespace) -> int:
    names = args.scenarios or DEFAULT
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        print(
            f"unknown scenario(s): {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}", file=sys.stderr
        )
        return 2
    if args.plane_cost:
        return _plane_cost(args, names)
    rows = []
    for name in names:
        try:
            result = _measure(args, name, args.url)
        except Exception as error:  # one failing scenario must not hide the others' figures
            print(f"{name}: failed: {error}", file=sys.stderr)
            continue
        row = {"name": name, "label": args.label, **asdict(result)}
        rows.append(row)
        print(_line(row), flush=True)
        if args.json_path:
            with open(args.json_path, "a") as out:
                out.write(json.dumps(row) + "\n")
    return 0 if len(rows) == len(names) else 1


def _measure(args: argparse.Namespace, name: str, url: str) -> Result:
    function, defaults = SCENARIOS[name]
    kwargs = dict(defaults)
    for key in _COUNTED:
        if key in kwargs:
            kwargs[key] = max(1, int(kwargs[key] * args.scale))
    if name in ("conns", "scale-conns", "scale-queues"):
        kwargs["pid"] = args.pid
    return function(url, **kwargs)


def _plane_cost(args: argparse.Namespace, names: Sequence[str]) -> int:
    def record(row: dict[str, Any]) -> None:
        row["label"] = args.label
        print(
            f"round {row['round'] + 1}  {row['name']:<11} planes {row['planes']:<3} "
            f"{row['rate']:>12,.0f} msg/s  broker CPU {row['cpu_us_per_msg']:.2f} µs/msg"
        )
        if args.json_path:
            with open(args.json_path, "a") as out:
                out.write(json.dumps(row) + "\n")

    rates, cpu = plane_cost.run(names, args.rounds, lambda name, url: _measure(args, name, url), record)
    print(plane_cost.table(rates, cpu))
    return 0


def _line(row: dict[str, Any]) -> str:
    latency = row.get("latency_us") or {}
    deliveries = row.get("deliveries_per_s")
    parts = [f"{row['name']:<11}", f"{row['rate']:>12,.0f} msg/s"]
    if deliveries:
        parts.append(f"{deliveries:>12,.0f} deliveries/s")
    if latency:
        parts.append(f"p50 {latency['p50']:,.0f} µs  p99 {latency['p99']:,.0f} µs")
    if row.get("extra"):
        parts.append(" ".join(f"{k}={v}" for k, v in row["extra"].items()))
    return "  ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))
