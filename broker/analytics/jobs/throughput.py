"""Throughput: published, routed, unroutable, delivered and acked messages (and bytes) per time window,
per exchange (publish side) and per queue (delivery side), with rates in messages per second."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from broker.analytics import inputs
from broker.analytics.output import write_results
from broker.analytics.schema import load_journal


def _per_window(frame: DataFrame, ts: str, metric: str, spec: str, key: str) -> DataFrame:
    """Counts per window and per ``key`` (exchange or queue); the other key column is null."""
    other = "queue" if key == "exchange" else "exchange"
    return (
        frame.groupBy(F.window(ts, spec).alias("w"), F.col(key))
        .agg(F.count(F.lit(1)).alias("messages"), F.sum(F.coalesce("body_size", F.lit(0))).alias("bytes"))
        .select(
            F.col("w.start").alias("window_start"),
            F.col("w.end").alias("window_end"),
            F.lit(metric).alias("metric"),
            F.col(key),
            F.lit(None).cast("string").alias(other),
            "messages",
            F.col("bytes").cast("long").alias("bytes"),
        )
        .select("window_start", "window_end", "metric", "exchange", "queue", "messages", "bytes")
    )


def compute(
    spark: SparkSession, journal_root: str, window: str = "10s", fmt: str = "auto"
) -> tuple[DataFrame, dict[str, Any]]:
    journal = load_journal(spark, journal_root, fmt)
    spec = inputs.window_spec(window)
    messages = inputs.messages(journal)
    deliveries = inputs.deliveries(journal)
    fates = inputs.fates(journal)
    parts = [
        _per_window(messages, "publish_ts", "published", spec, "exchange"),
        _per_window(messages.where(F.col("fanout") > 0), "publish_ts", "routed", spec, "exchange"),
        _per_window(messages.where(F.col("fanout") == 0), "publish_ts", "unroutable", spec, "exchange"),
        _per_window(deliveries, "deliver_ts", "delivered", spec, "queue"),
        _per_window(fates.where(F.col("fate") == "ack"), "ts", "acked", spec, "queue"),
    ]
    seconds = F.unix_micros("window_end") - F.unix_micros("window_start")
    data = (
        parts[0]
        .unionByName(parts[1])
        .unionByName(parts[2])
        .unionByName(parts[3])
        .unionByName(parts[4])
        .withColumn("rate_per_s", F.col("messages") / (seconds / F.lit(1_000_000.0)))
        .orderBy("window_start", "metric", "exchange", "queue")
    )
    totals = {
        row["metric"]: row["n"] for row in data.groupBy("metric").agg(F.sum("messages").alias("n")).collect()
    }
    metrics = ("published", "routed", "unroutable", "delivered", "acked")
    summary = {"job": "throughput", "window": spec, "totals": {m: int(totals.get(m) or 0) for m in metrics}}
    return data, summary


def run(spark: SparkSession, journal_root: str, out: str, **options: Any) -> dict[str, Any]:
    data, summary = compute(spark, journal_root, **options)
    rows = [{"metric": metric, "messages": n} for metric, n in summary["totals"].items()]
    write_results(spark, out, data, summary, rows)
    return summary
