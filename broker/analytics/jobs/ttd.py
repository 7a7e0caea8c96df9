"""Time to delivery: p50/p95/p99/max and counts per time window and per exchange and/or queue.

TTD is deliver time minus publish time of each delivery (redeliveries included, flagged by ``redelivered``
in the journal); the publish time is carried on every row, so no join is needed. ``exact`` uses Spark's exact
``percentile`` (tests, small journals); otherwise ``percentile_approx`` with accuracy 10000.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from broker.analytics import inputs
from broker.analytics.errors import AnalyticsError
from broker.analytics.output import write_results
from broker.analytics.schema import load_journal

KEYS = ("exchange", "queue", "vhost")


def _percentiles(exact: bool) -> list[Column]:
    values = F.col("ttd_ms")
    if exact:
        found = [F.percentile(values, p) for p in (0.5, 0.95, 0.99)]
    else:
        found = [F.percentile_approx(values, p, 10000).cast("double") for p in (0.5, 0.95, 0.99)]
    return [
        found[0].alias("p50_ms"),
        found[1].alias("p95_ms"),
        found[2].alias("p99_ms"),
        F.max(values).alias("max_ms"),
        F.count(F.lit(1)).alias("n"),
    ]


def parse_by(text: str) -> list[str]:
    keys = [key.strip() for key in text.split(",") if key.strip()]
    if not keys or any(key not in KEYS for key in keys):
        raise AnalyticsError(f"--by takes a comma-separated list of {', '.join(KEYS)}, not {text!r}")
    return keys


def compute(
    spark: SparkSession, journal_root: str, window: str = "10s", by: str = "exchange", exact: bool = False,
    fmt: str = "auto",
) -> tuple[DataFrame, DataFrame, dict[str, Any]]:  # fmt: skip
    """(per window and key, per key over the whole journal, summary)."""
    keys = parse_by(by)
    frame = inputs.deliveries(load_journal(spark, journal_root, fmt))
    spec = inputs.window_spec(window)
    windowed = (
        frame.groupBy(F.window("deliver_ts", spec).alias("w"), *keys)
        .agg(*_percentiles(exact))
        .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), *keys,
                "p50_ms", "p95_ms", "p99_ms", "max_ms", "n")
        .orderBy("window_start", *keys)
    )  # fmt: skip
    overall = frame.groupBy(*keys).agg(*_percentiles(exact)).orderBy(*keys)
    rows = [row.asDict() for row in overall.collect()]
    if not rows:
        raise AnalyticsError(f"the journal at {journal_root} has no deliveries")
    summary = {
        "job": "ttd",
        "window": spec,
        "by": keys,
        "exact": exact,
        "deliveries": sum(row["n"] for row in rows),
        "keys": rows,
    }
    return windowed, overall, summary


def run(spark: SparkSession, journal_root: str, out: str, **options: Any) -> dict[str, Any]:
    windowed, _overall, summary = compute(spark, journal_root, **options)
    write_results(spark, out, windowed, summary, summary["keys"])
    return summary
