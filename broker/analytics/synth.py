"""`warrenmq analytics synth`: a synthetic journal of any size, for the scale benchmarks.

Writes Parquet files in the journal's layout and schema (version 1) with pyarrow and numpy, no broker.
``--deliveries N``: compact delivery rows (one per message, acked; 1 in 100 nacked) spread over exchanges
and queues at ``--rate`` messages per simulated second, TTD drawn from an exponential distribution.
``--captures N``: route_capture rows on the topic exchange ``orders`` plus two definitions files
(``defs-a.json``: ``--bindings`` topic bindings; ``defs-b.json``: the same with 1 binding in 100 moved to
another queue), so `replay` has work.
Captured keys are ``r<region>.i<item>.m<msg_seq>``, each one distinct (the memo in replay does not help);
bindings are ``r<region>.i<item>.#``, 1 in 50 ``r<region>.#``, and a few keys match none. ``queues`` (what
the live broker did) is left null: topology A is taken as the live one.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from broker.analytics.errors import AnalyticsError
from broker.analytics.schema import COLUMNS, DELIVERIES, ROUTE_CAPTURE, SCHEMA_VERSION

T0_US = 1_700_000_000_000_000  # 2023-11-14T22:13:20Z
REGIONS = 100
_ARROW = {
    "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(), "string": pa.string(), "bool": pa.bool_(),
    "ts": pa.timestamp("us", tz="UTC"), "strings": pa.list_(pa.string()),
}  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="journal directory to create")
    parser.add_argument("--deliveries", type=int, default=0, help="compact delivery rows")
    parser.add_argument("--captures", type=int, default=0, help="route_capture rows (with defs-a/-b.json)")
    parser.add_argument("--bindings", type=int, default=10_000, help="topic bindings in defs-a.json")
    parser.add_argument("--exchanges", type=int, default=8)
    parser.add_argument("--queues", type=int, default=64)
    parser.add_argument("--rate", type=float, default=10_000.0, help="messages per simulated second")
    parser.add_argument("--rows-per-file", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)


def _names(prefix: str, count: int, index: np.ndarray) -> pa.Array:
    """``prefix<i>`` strings built once per distinct value and picked by index (dictionary-decoded)."""
    dictionary = pa.array([f"{prefix}{i}" for i in range(count)], pa.string())
    return dictionary.take(pa.array(index))


def _constant(value: str, rows: int) -> pa.Array:
    return pa.array([value], pa.string()).take(pa.array(np.zeros(rows, np.int32)))


def _write(root: Path, table: str, columns: dict[str, Any], part: int, first_us: int) -> None:
    rows = len(next(iter(columns.values())))
    arrays = []
    for name, kind in COLUMNS[table]:
        value = columns.get(name)
        if name == "v":
            value = np.full(rows, SCHEMA_VERSION, np.int16)
        elif name == "node":
            value = _constant("synth", rows)
        if value is None:
            arrays.append(pa.nulls(rows, _ARROW[kind]))
        elif isinstance(value, pa.Array):
            arrays.append(value.cast(_ARROW[kind]))
        else:
            arrays.append(pa.array(value, _ARROW[kind]))
    stamp = time.gmtime(first_us // 1_000_000)
    folder = root / table / time.strftime("date=%Y-%m-%d/hour=%H", stamp)
    folder.mkdir(parents=True, exist_ok=True)
    names = [name for name, _ in COLUMNS[table]]
    pq.write_table(pa.Table.from_arrays(arrays, names), folder / f"synth-{first_us}-{part}.parquet")


def _deliveries(root: Path, args: argparse.Namespace, rng: np.random.Generator) -> None:
    for part, start in enumerate(range(0, args.deliveries, args.rows_per_file)):
        seq = np.arange(start, min(start + args.rows_per_file, args.deliveries), dtype=np.int64)
        publish = T0_US + (seq * (1_000_000 / args.rate)).astype(np.int64)
        deliver = publish + rng.exponential(500.0, len(seq)).astype(np.int64)
        nacked = rng.random(len(seq)) < 0.01
        rows = len(seq)
        columns = {
            "ts": deliver + 50,
            "outcome": np.where(nacked, "nack", "ack").astype(object),
            "vhost": _constant("/", rows),
            "msg_seq": seq,
            "exchange": _names("ex", args.exchanges, seq % args.exchanges),
            "routing_key": _names("k", 1000, seq % 1000),
            "queue": _names("q", args.queues, seq % args.queues),
            "fanout": np.ones(rows, np.int32),
            "body_size": np.full(rows, 100, np.int64),
            "publish_ts": publish,
            "deliver_ts": deliver,
            "redelivered": np.zeros(rows, bool),
        }
        _write(root, DELIVERIES, columns, part, int(publish[0]))


def topology(bindings: int, queues: int, moved: bool) -> dict[str, Any]:
    """A definitions document: topic exchange ``orders`` with ``bindings`` bindings over ``queues`` queues;
    ``moved`` sends 1 binding in 100 to the next queue (the candidate topology)."""
    items = []
    for j in range(bindings):
        key = f"r{j % REGIONS}.#" if j % 50 == 49 else f"r{j % REGIONS}.i{j // REGIONS}.#"
        queue = (j + 1) % queues if moved and j % 100 == 7 else j % queues
        binding = {"source": "orders", "vhost": "/", "destination": f"q{queue}"}
        items.append({**binding, "destination_type": "queue", "routing_key": key, "arguments": {}})
    return {
        "vhosts": [{"name": "/"}],
        "exchanges": [{"name": "orders", "vhost": "/", "type": "topic", "durable": True, "auto_delete": False,
                       "internal": False, "arguments": {}}],
        "queues": [{"name": f"q{q}", "vhost": "/", "durable": True, "auto_delete": False, "arguments": {}}
                   for q in range(queues)],
        "bindings": items,
    }  # fmt: skip


def _captures(root: Path, args: argparse.Namespace, rng: np.random.Generator) -> None:
    items = max(1, args.bindings // REGIONS)
    for part, start in enumerate(range(0, args.captures, args.rows_per_file)):
        seq = np.arange(start, min(args.captures, start + args.rows_per_file), dtype=np.int64)
        # Items up to 5% past the last bound one: those keys match only an r<region>.* binding, or nothing.
        region = rng.integers(0, REGIONS, len(seq))
        item = rng.integers(0, int(items * 1.05) + 1, len(seq))
        prefix = np.char.add(np.char.add(np.char.add("r", region.astype(str)), ".i"), item.astype(str))
        keys = pa.array(np.char.add(np.char.add(prefix, ".m"), seq.astype(str)))
        columns = {
            "ts": T0_US + (seq * (1_000_000 / args.rate)).astype(np.int64),
            "vhost": _constant("/", len(seq)), "msg_seq": seq,
            "exchange": _constant("orders", len(seq)), "routing_key": keys,
        }  # fmt: skip
        _write(root, ROUTE_CAPTURE, columns, part, int(columns["ts"][0]))
    for name, moved in (("defs-a.json", False), ("defs-b.json", True)):
        (root / name).write_text(json.dumps(topology(args.bindings, args.queues, moved)), encoding="utf-8")


def synthesize(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(args.out)
    if root.exists() and any(root.iterdir()):
        raise AnalyticsError(f"--out must be a new or empty directory: {args.out}")
    if args.deliveries <= 0 and args.captures <= 0:
        raise AnalyticsError("nothing to write: give --deliveries N and/or --captures N")
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    if args.deliveries > 0:
        _deliveries(root, args, rng)
    if args.captures > 0:
        _captures(root, args, rng)
    summary: dict[str, Any] = {
        "job": "synth",
        "journal": str(root),
        "deliveries": args.deliveries,
        "captures": args.captures,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if args.captures > 0:
        summary.update(
            bindings=args.bindings, defs_a=str(root / "defs-a.json"), defs_b=str(root / "defs-b.json")
        )
    return summary
