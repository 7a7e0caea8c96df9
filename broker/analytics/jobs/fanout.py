"""Fan-out: how many queues each message reached (0 = unroutable), per exchange, and the counts of returned,
dead-lettered (by reason), expired, dropped (by reason) and nacked messages."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from broker.analytics import inputs
from broker.analytics.output import write_results
from broker.analytics.schema import load_journal


def compute(spark: SparkSession, journal_root: str, fmt: str = "auto") -> tuple[DataFrame, dict[str, Any]]:
    journal = load_journal(spark, journal_root, fmt)
    messages = inputs.messages(journal).where(F.col("fanout").isNotNull())
    distribution = (
        messages.groupBy("exchange", "fanout")
        .agg(F.count(F.lit(1)).alias("messages"))
        .orderBy("exchange", "fanout")
    )
    stats = messages.agg(
        F.count(F.lit(1)).alias("messages"),
        F.sum(F.when(F.col("fanout") == 0, 1).otherwise(0)).alias("unroutable"),
        F.avg("fanout").alias("mean_fanout"),
        F.max("fanout").alias("max_fanout"),
        F.sum("fanout").alias("copies"),
    ).collect()[0]
    fates = inputs.fates(journal)
    by_fate: dict[str, dict[str, int]] = {}
    for row in fates.groupBy("fate", "reason").agg(F.count(F.lit(1)).alias("n")).collect():
        by_fate.setdefault(row["fate"], {})[row["reason"] or ""] = int(row["n"])
    returned = fates.where(F.col("fate") == "returned").select("node", "msg_seq").distinct().count()

    def total(fate: str) -> int:
        return sum(by_fate.get(fate, {}).values())

    summary: dict[str, Any] = {
        "job": "fanout",
        "messages": int(stats["messages"]),
        "unroutable": int(stats["unroutable"] or 0),
        "returned": int(returned),
        "copies": int(stats["copies"] or 0),
        "mean_fanout": float(stats["mean_fanout"]) if stats["mean_fanout"] is not None else None,
        "max_fanout": stats["max_fanout"],
        "dead_lettered": total("dead_letter"),
        "dead_lettered_by_reason": by_fate.get("dead_letter", {}),
        "expired": total("expire"),
        "dropped": total("drop"),
        "dropped_by_reason": by_fate.get("drop", {}),
        "nacked": total("nack"),
        "distribution": {
            str(row["fanout"]): int(row["messages"])
            for row in messages.groupBy("fanout").count().withColumnRenamed("count", "messages").collect()
        },
    }
    return distribution, summary


def run(spark: SparkSession, journal_root: str, out: str, **options: Any) -> dict[str, Any]:
    distribution, summary = compute(spark, journal_root, **options)
    rows = [
        {"fanout": k, "messages": v}
        for k, v in sorted(summary["distribution"].items(), key=lambda i: int(i[0]))
    ]
    write_results(spark, out, distribution, summary, rows)
    return summary
