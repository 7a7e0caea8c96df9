"""The journal's two shapes (full events, compact deliveries) as the few views the jobs need.

Full mode has one row per event; compact mode one row per delivery attempt or final fate. A journal may hold
both (the broker was restarted in another mode); each view unions what it finds.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from broker.analytics.errors import AnalyticsError
from broker.analytics.schema import Journal


def _union(parts: list[DataFrame], what: str, journal: Journal) -> DataFrame:
    if not parts:
        raise AnalyticsError(f"the journal at {journal.root} has no {what}")
    return reduce(DataFrame.unionByName, parts)


def _null(kind: str) -> Column:
    return F.lit(None).cast(kind)


def deliveries(journal: Journal) -> DataFrame:
    """One row per delivery: node, msg_seq, vhost, exchange, routing_key, queue, publish_ts, deliver_ts,
    redelivered, body_size, ttd_ms (deliver minus publish, in milliseconds)."""
    cols = ["node", "msg_seq", "vhost", "exchange", "routing_key", "queue", "publish_ts"]
    parts = []
    if journal.events is not None:
        parts.append(
            journal.events.where(F.col("event") == "deliver").select(
                *cols, F.col("ts").alias("deliver_ts"), "redelivered", "body_size"
            )
        )
    if journal.deliveries is not None:
        parts.append(
            journal.deliveries.where(F.col("deliver_ts").isNotNull()).select(
                *cols, "deliver_ts", "redelivered", "body_size"
            )
        )
    frame = _union(parts, "deliveries", journal)
    micros = F.unix_micros(F.col("deliver_ts")) - F.unix_micros(F.col("publish_ts"))
    return frame.withColumn("ttd_ms", micros / F.lit(1000.0))


def messages(journal: Journal) -> DataFrame:
    """One row per published message: node, msg_seq, vhost, exchange, routing_key, publish_ts, fanout,
    body_size. Compact journals only know messages that reached a row (a fate or a settled delivery)."""
    parts = []
    if journal.events is not None:
        events = journal.events
        published = events.where(F.col("event") == "publish").select(
            "node", "msg_seq", "vhost", "exchange", "routing_key", "publish_ts", "body_size"
        )
        routes = (
            events.where(F.col("event") == "route")
            .groupBy("node", "msg_seq")
            .agg(F.first("fanout").alias("fanout"))
        )
        parts.append(published.join(routes, ["node", "msg_seq"], "left"))
    if journal.deliveries is not None:
        parts.append(
            journal.deliveries.groupBy("node", "msg_seq").agg(
                F.first("vhost").alias("vhost"),
                F.first("exchange").alias("exchange"),
                F.first("routing_key").alias("routing_key"),
                F.min("publish_ts").alias("publish_ts"),
                F.max("body_size").alias("body_size"),
                F.max("fanout").alias("fanout"),
            )
        )
    return _union(parts, "published messages", journal).dropDuplicates(["node", "msg_seq"])


def fates(journal: Journal) -> DataFrame:
    """One row per message fate that is not a delivery: fate (ack, nack, requeue, returned, unroutable,
    drop, dead_letter, expire), ts, exchange, queue, reason, body_size."""
    cols = ["node", "msg_seq", "exchange", "queue", "reason", "body_size"]
    parts = []
    if journal.events is not None:
        names = ["ack", "nack", "requeue", "return", "drop", "dead_letter", "expire"]
        events = journal.events.where(F.col("event").isin(names))
        fate = F.when(F.col("event") == "return", F.lit("returned")).otherwise(F.col("event"))
        parts.append(events.select(fate.alias("fate"), "ts", *cols))
        unroutable = journal.events.where((F.col("event") == "route") & (F.col("fanout") == 0))
        parts.append(unroutable.select(F.lit("unroutable").alias("fate"), "ts", *cols))
    if journal.deliveries is not None:
        parts.append(journal.deliveries.select(F.col("outcome").alias("fate"), "ts", *cols))
    return _union(parts, "message fates", journal)


def window_spec(text: str) -> str:
    """'10s' → '10 seconds', '1m' → '1 minutes', '500ms' → '500 milliseconds'; Spark's own forms pass."""
    text = text.strip()
    if " " in text:
        return text
    for suffix, unit in (("ms", "milliseconds"), ("s", "seconds"), ("m", "minutes"), ("h", "hours")):
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return f"{text[: -len(suffix)]} {unit}"
    raise AnalyticsError(f"bad window {text!r}: use e.g. 500ms, 10s, 1m, 1h")
