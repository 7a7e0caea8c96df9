"""Scale benchmark of the analytics jobs over synthetic journals (`warrenmq analytics synth`), in local mode
and on a one-worker standalone cluster; prints a Markdown table for docs/benchmarks.md.

    python -m tests.analytics.scale_bench --dir /tmp/wmq-scale [--deliveries 10000000] [--captures 1000000]
        [--bindings 10000] [--where local,cluster] [--jobs ttd,throughput,fanout,replay]

Each job runs as the user would run it (`warrenmq analytics JOB …`, a fresh driver JVM each time), so the
wall time includes Spark's start; a run over a 1,000-row journal measures that fixed cost separately.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.analytics.standalone import StandaloneCluster, spark_env

WARRENMQ = [sys.executable, "-m", "broker", "analytics"]


def synth(folder: Path, *options: str) -> dict[str, object]:
    if (folder / "synth.json").is_file():
        return dict(json.loads((folder / "synth.json").read_text()))
    done = subprocess.run(
        [*WARRENMQ, "synth", "--out", str(folder), *options], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    (folder / "synth.json").write_text(done.stdout)
    return dict(json.loads(done.stdout))


def timed(command: list[str], env: dict[str, str]) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}\n{done.stderr}")
    return seconds, dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--deliveries", type=int, default=10_000_000)
    parser.add_argument("--captures", type=int, default=1_000_000)
    parser.add_argument("--bindings", type=int, default=10_000)
    parser.add_argument("--where", default="local,cluster")
    parser.add_argument("--jobs", default="ttd,throughput,fanout,replay")
    parser.add_argument("--worker-cores", type=int, default=2)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    deliveries = synth(args.dir / "deliveries", "--deliveries", str(args.deliveries))
    captures = synth(
        args.dir / "captures",
        "--captures",
        str(args.captures),
        "--bindings",
        str(args.bindings),
        "--queues",
        "1000",
    )
    tiny = synth(args.dir / "tiny", "--deliveries", "1000")
    print(f"synth: {args.deliveries:,} deliveries in {deliveries['seconds']} s, ", end="")
    print(f"{args.captures:,} captures in {captures['seconds']} s", flush=True)
    jobs = args.jobs.split(",")
    rows: list[str] = []
    cluster = None
    try:
        for where in args.where.split(","):
            extra: list[str] = []
            env = spark_env(args.dir / "conf")
            if where == "cluster":
                folder = args.dir / f"cluster-{time.time_ns()}"
                cluster = StandaloneCluster(
                    folder, worker_cores=args.worker_cores, worker_memory="3g"
                ).start()
                archive = args.dir / "warrenmq-env.tar.gz"
                if not archive.is_file():
                    subprocess.run(
                        [*WARRENMQ, "pack", "--out", str(archive)], check=True, capture_output=True
                    )
                extra = [
                    "--master",
                    cluster.url,
                    "--python-env",
                    str(archive),
                    "--conf",
                    "spark.executor.memory=2g",
                ]
                env = cluster.env()
            else:
                extra = ["--master", f"local[{os.cpu_count() or 2}]", "--driver-memory", "3g"]
            out = args.dir / f"out-{where}"
            floor_run = [*WARRENMQ, "fanout", "--journal", str(tiny["journal"]), "--out", str(out / "tiny")]
            floor, _ = timed([*floor_run, *extra], env)
            rows.append(
                f"| {where} | fanout over 1,000 rows (Spark's fixed cost) | 1,000 | {floor:.1f} | — |"
            )
            print(rows[-1], flush=True)
            for job in jobs:
                source = captures if job == "replay" else deliveries
                command = [
                    *WARRENMQ,
                    job,
                    "--journal",
                    str(source["journal"]),
                    "--out",
                    str(out / job),
                    *extra,
                ]
                if job == "replay":
                    command += ["--defs-a", str(captures["defs_a"]), "--defs-b", str(captures["defs_b"])]
                seconds, summary = timed(command, env)
                count = args.captures if job == "replay" else args.deliveries
                what = f"{job} ({args.bindings:,} bindings)" if job == "replay" else job
                rows.append(f"| {where} | {what} | {count:,} | {seconds:.1f} | {count / seconds:,.0f} |")
                print(rows[-1], flush=True)
                (out / f"{job}.json").write_text(json.dumps(summary, default=str))
    finally:
        if cluster is not None:
            cluster.stop()
    print("\n| Where | Job | Rows | Wall s | Rows/s |\n|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
