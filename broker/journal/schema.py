"""The journal's versioned file schema: three tables, their columns, event names and file layout.

Files: ``<dir>/<table>/date=YYYY-MM-DD/hour=HH/<node>-<first_ts_us>-<seq>.(parquet|jsonl)``. Spark's partition
discovery turns ``date`` and ``hour`` into columns; in-progress files are dot-prefixed (Spark and Hadoop skip
them) and renamed when complete. Every row carries ``v`` (the schema version) so readers can refuse files they
do not understand, and Parquet files also carry it in their key/value metadata.

Timestamps are int64 microseconds since the Unix epoch (UTC); Parquet stores them as ``timestamp[us, UTC]``,
JSON Lines as plain integers. Bump ``SCHEMA_VERSION`` on any incompatible change, and keep
broker/analytics/schema.py (which must not import this module) in step: a test compares the two.
"""

from __future__ import annotations

from typing import Final

SCHEMA_VERSION: Final = 1
METADATA_KEY: Final = b"warrenmq.journal.schema_version"

EVENTS: Final = "events"  # full mode: one row per event (plus topology and journal_drop rows in every mode)
DELIVERIES: Final = "deliveries"  # compact mode: one row per delivery attempt or final fate
ROUTE_CAPTURE: Final = "route_capture"  # opt-in routing inputs for replay
TABLES: Final = (EVENTS, DELIVERIES, ROUTE_CAPTURE)

# Logical column types: "ts" = int64 µs since the epoch (timestamp[us, UTC] in Parquet), "strings" = list.
# The first two columns of every table (v, node) are constants the writer adds; the recorder's row tuples
# hold the remaining columns in this order.
COLUMNS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    EVENTS: (
        ("v", "int16"),
        ("node", "string"),
        ("ts", "ts"),
        ("event", "string"),
        ("vhost", "string"),
        ("msg_seq", "int64"),
        ("exchange", "string"),
        ("routing_key", "string"),
        ("queue", "string"),
        ("publish_ts", "ts"),
        ("fanout", "int32"),
        ("body_size", "int64"),
        ("connection", "string"),
        ("channel", "int32"),
        ("delivery_tag", "int64"),
        ("redelivered", "bool"),
        ("reason", "string"),
        ("count", "int64"),
        ("detail", "string"),
    ),
    DELIVERIES: (
        ("v", "int16"),
        ("node", "string"),
        ("ts", "ts"),  # when the row was closed (the settle time, or the fate's time)
        ("outcome", "string"),
        ("vhost", "string"),
        ("msg_seq", "int64"),
        ("exchange", "string"),
        ("routing_key", "string"),
        ("queue", "string"),
        ("fanout", "int32"),
        ("body_size", "int64"),
        ("publish_ts", "ts"),
        ("deliver_ts", "ts"),
        ("redelivered", "bool"),
        ("reason", "string"),
    ),
    ROUTE_CAPTURE: (
        ("v", "int16"),
        ("node", "string"),
        ("ts", "ts"),
        ("vhost", "string"),
        ("msg_seq", "int64"),
        ("exchange", "string"),
        ("routing_key", "string"),
        (
            "headers_json",
            "string",
        ),  # broker.core.model.typed_json: AMQP types kept (headers matching is typed)
        ("queues", "strings"),  # what the live broker routed to
    ),
}
CONSTANT_COLUMNS: Final = 2  # v, node

# Event names in the events table (full mode).
PUBLISH, ROUTE, RETURN, DELIVER = "publish", "route", "return", "deliver"
ACK, NACK, REQUEUE = "ack", "nack", "requeue"
DEAD_LETTER, EXPIRE, DROP, JOURNAL_DROP = "dead_letter", "expire", "drop", "journal_drop"

# Outcomes in the deliveries table (compact mode). A delivery attempt ends in ack, nack (detail in
# ``reason``: "requeue" when requeued) or requeue (channel closed or basic.recover); fates without a delivery
# get their own row: unroutable, returned, drop, dead_letter, expire.
OUTCOME_ACK, OUTCOME_NACK, OUTCOME_REQUEUE = "ack", "nack", "requeue"
OUTCOME_UNROUTABLE, OUTCOME_RETURNED = "unroutable", "returned"


def row_width(table: str) -> int:
    """The number of values in a recorder row tuple for ``table``."""
    return len(COLUMNS[table]) - CONSTANT_COLUMNS
