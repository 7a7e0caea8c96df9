"""`warrenmq analytics <job> …` and `python -m broker.analytics <job> …` (also under spark-submit)."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from broker.analytics.errors import AnalyticsError

JOBS = ("ttd", "throughput", "fanout", "replay", "report", "pack", "synth")
SPARK_JOBS = ("ttd", "throughput", "fanout", "replay")


def _conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def build_parser(prog: str = "warrenmq analytics") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="PySpark jobs over the WarrenMQ event journal.")
    jobs = parser.add_subparsers(dest="job", required=True)

    def spark_job(name: str, text: str) -> argparse.ArgumentParser:
        job = jobs.add_parser(name, help=text, description=text)
        job.add_argument("--journal", required=True, help="journal directory (local, hdfs://, s3a://)")
        job.add_argument("--out", required=True, help="output directory: data/ (Parquet), summary.json/.csv")
        job.add_argument("--format", choices=("auto", "parquet", "jsonl"), default="auto")
        job.add_argument(
            "--master", default=None, help="Spark master (default local[*]; spark-submit's wins)"
        )
        job.add_argument("--driver-memory", default=None)
        job.add_argument("--shuffle-partitions", type=int, default=8)
        job.add_argument(
            "--python-env",
            default=None,
            metavar="ARCHIVE",
            help="executors' Python from `warrenmq analytics pack` (spark.archives + spark.pyspark.python)",
        )
        job.add_argument(
            "--conf", action="append", type=_conf_pair, default=[], metavar="KEY=VALUE", help="Spark setting"
        )
        job.add_argument("--verbose", action="store_true", help="Spark's log and full traces on stderr")
        return job

    ttd = spark_job("ttd", "time-to-delivery percentiles per window and per exchange and/or queue")
    ttd.add_argument("--window", default="10s", help="e.g. 1s, 10s, 1m")
    ttd.add_argument("--by", default="exchange", help="exchange, queue, vhost or a comma-separated mix")
    ttd.add_argument("--exact", action="store_true", help="exact percentiles (slower) instead of approximate")
    throughput = spark_job("throughput", "published/routed/delivered/acked per window, exchange and queue")
    throughput.add_argument("--window", default="10s")
    spark_job("fanout", "queues reached per message; unroutable, returned, dead-lettered, expired counts")
    replay = spark_job("replay", "replay captured routing inputs against two definitions files")
    replay.add_argument("--defs-a", required=True, help="RabbitMQ definitions JSON: the current topology")
    replay.add_argument("--defs-b", required=True, help="RabbitMQ definitions JSON: the candidate topology")
    replay.add_argument("--vhost", default=None, help="only this vhost's captures")
    report = jobs.add_parser("report", help="PNG charts and one self-contained HTML page from job outputs")
    report.add_argument(
        "--results", required=True, help="a directory holding ttd/, throughput/, fanout/, replay/"
    )
    report.add_argument("--out", required=True)
    report.add_argument("--verbose", action="store_true")
    pack = jobs.add_parser(
        "pack", help="the executors' Python environment as one archive (venv-pack) for --archives"
    )
    pack.add_argument("--out", required=True, help="archive path ending in .tar.gz (or .tgz, .zip, .tar)")
    pack.add_argument("--with", dest="extra", action="append", default=[], help="another package to add")
    pack.add_argument("--verbose", action="store_true")
    from broker.analytics.synth import add_arguments

    add_arguments(jobs.add_parser("synth", help="a synthetic journal of any size (benchmarks)"))
    return parser


def run(
    args: argparse.Namespace, spark: Any = None, log_config: Path | None = None, log: Path | None = None
) -> dict[str, Any]:
    """Run one job; ``spark`` reuses a session (tests), otherwise one is built and stopped here."""
    if args.job == "report":
        from broker.analytics.report import render

        return render(args.results, args.out)
    if args.job == "pack":
        from broker.analytics.pack import pack

        return pack(args.out, args.extra, args.verbose)
    if args.job == "synth":
        from broker.analytics.synth import synthesize

        return synthesize(args)
    _check_inputs(args)
    from broker.analytics.jobs import fanout, replay, throughput, ttd
    from broker.analytics.output import clear_summaries
    from broker.analytics.session import build_spark

    own = spark is None
    if own:
        spark = build_spark(
            args.master, f"warrenmq-{args.job}", args.shuffle_partitions, args.driver_memory,
            progress=sys.stderr.isatty() and args.verbose, python_env=args.python_env,
            conf=dict(args.conf), log_config=log_config, jvm_log=log,
        )  # fmt: skip
    try:
        clear_summaries(args.out, spark)
        common = {"fmt": args.format}
        if args.job == "ttd":
            return ttd.run(
                spark, args.journal, args.out, window=args.window, by=args.by, exact=args.exact, **common
            )
        if args.job == "throughput":
            return throughput.run(spark, args.journal, args.out, window=args.window, **common)
        if args.job == "fanout":
            return fanout.run(spark, args.journal, args.out, **common)
        return replay.run(
            spark, args.journal, args.out, defs_a=args.defs_a, defs_b=args.defs_b, vhost=args.vhost, **common
        )
    finally:
        if own:
            spark.stop()


def _check_inputs(args: argparse.Namespace) -> None:
    """Fail on missing local inputs and bad definitions before paying for a JVM start (5-11 s)."""
    from broker.analytics.output import clear_summaries
    from broker.analytics.schema import is_local

    if is_local(args.out):
        clear_summaries(args.out)  # an old summary must not pass for this run's if it fails
    if is_local(args.journal) and not Path(args.journal.removeprefix("file:")).exists():
        raise AnalyticsError(f"journal path does not exist: {args.journal}")
    if args.job == "replay":
        from broker.analytics.jobs.replay import read_definitions

        read_definitions(args.defs_a)
        read_definitions(args.defs_b)


def main(argv: Sequence[str] | None = None, prog: str = "warrenmq analytics") -> int:
    args = build_parser(prog).parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    log = log_config = None
    if args.job in SPARK_JOBS and not verbose:
        from broker.analytics.failures import log4j_config, log_file

        log = log_file(args.job)
        log_config = log4j_config(log)
    try:
        summary = run(args, log_config=log_config, log=log)
    except AnalyticsError as error:
        _remove(log, log_config)  # the line says it all
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # Spark's own failures (JVM, executors): one line unless --verbose
        if verbose or log is None:
            raise
        from broker.analytics.failures import explain

        with log.open("a", encoding="utf-8") as sink:
            sink.write("\n" + "".join(traceback.format_exception(error)))
        print(f"{prog}: error: {explain(error)} (full log: {log})", file=sys.stderr)
        return 1
    _remove(log, log_config)  # kept only when Spark failed
    print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    return 0


def _remove(*paths: Path | None) -> None:
    for path in paths:
        if path is not None:
            path.unlink(missing_ok=True)
