"""Plots of the long runs for docs/benchmarks.md: the soak's per-minute samples (benchmarks/soak.py) and the
kill cycles' per-cycle lines (benchmarks/kill_cycles.py). Needs matplotlib (the ``analytics`` extra).

    .venv/bin/python benchmarks/plot_long_runs.py --soak /tmp/soak.jsonl --kill /tmp/kill_cycles.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the backend


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot_soak(path: Path, out: Path) -> None:
    samples = _lines(path)
    minutes = [s["minute"] for s in samples]
    figure, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [
        (axes[0][0], [("rss_mb", "RSS")], "MB"),
        (axes[0][1], [("open_fds", "open file descriptors")], "count"),
        (axes[1][0], [("lag_p50_ms", "lag p50"), ("lag_p99_ms", "lag p99")], "ms"),
        (axes[1][1], [("latency_p50_ms", "publish→deliver p50"), ("latency_p99_ms", "p99")], "ms"),
    ]
    for axis, series, unit in panels:
        for key, label in series:
            axis.plot(minutes, [s[key] for s in samples], marker=".", label=label)
        axis.set_ylabel(unit)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
        axis.legend(loc="upper left")
    load = axes[1][1].twinx()
    load.plot(minutes, [s["load_average"] for s in samples], color="grey", alpha=0.4, label="load average")
    load.set_ylabel("machine load average (2 cores)")
    load.set_ylim(bottom=0)
    for axis in axes[1]:
        axis.set_xlabel("minute")
    figure.suptitle(f"Soak: {len(samples)} minutes, steady mixed load with churn (benchmarks/soak.py)")
    figure.tight_layout()
    figure.savefig(out, dpi=90)


def plot_kill(path: Path, out: Path) -> None:
    lines = [line for line in _lines(path) if not line.get("summary")]
    cycles = [line["cycle"] for line in lines]
    figure, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    axes[0].bar(cycles, [line["confirmed"] for line in lines], color="tab:blue")
    axes[0].set_title("confirmed per cycle")
    axes[1].plot(cycles, [line["restart_s"] for line in lines], marker=".", label="restart to ready (s)")
    axes[1].plot(cycles, [line["unmarked"] for line in lines], label="unmarked redeliveries (cumulative)")
    axes[1].set_title("restart time and unmarked redeliveries")
    axes[1].legend(loc="upper left")
    for axis in axes:
        axis.set_xlabel("kill cycle")
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--soak", type=Path)
    parser.add_argument("--kill", type=Path)
    parser.add_argument("--images", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    args.images.mkdir(parents=True, exist_ok=True)
    if args.soak:
        plot_soak(args.soak, args.images / "soak.png")
    if args.kill:
        plot_kill(args.kill, args.images / "kill_cycles.png")


if __name__ == "__main__":
    main()
