"""Reading journal files: the Spark schemas of the three tables and the checks that give clear errors.

Mirrors broker/journal/schema.py without importing it (the journal is the broker's outer ring; a test keeps
the two in step). JSON Lines files hold timestamps as integer microseconds; they are read with an explicit
schema and converted, so both formats give the same DataFrame.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from broker.analytics.errors import AnalyticsError

SCHEMA_VERSION = 1
EVENTS, DELIVERIES, ROUTE_CAPTURE = "events", "deliveries", "route_capture"

_TYPES: dict[str, T.DataType] = {
    "int16": T.ShortType(),
    "int32": T.IntegerType(),
    "int64": T.LongType(),
    "string": T.StringType(),
    "bool": T.BooleanType(),
    "ts": T.LongType(),  # µs in JSON Lines; converted after reading
    "strings": T.ArrayType(T.StringType()),
}

COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    EVENTS: (
        ("v", "int16"), ("node", "string"), ("ts", "ts"), ("event", "string"), ("vhost", "string"),
        ("msg_seq", "int64"), ("exchange", "string"), ("routing_key", "string"), ("queue", "string"),
        ("publish_ts", "ts"), ("fanout", "int32"), ("body_size", "int64"), ("connection", "string"),
        ("channel", "int32"), ("delivery_tag", "int64"), ("redelivered", "bool"), ("reason", "string"),
        ("count", "int64"), ("detail", "string"),
    ),
    DELIVERIES: (
        ("v", "int16"), ("node", "string"), ("ts", "ts"), ("outcome", "string"), ("vhost", "string"),
        ("msg_seq", "int64"), ("exchange", "string"), ("routing_key", "string"), ("queue", "string"),
        ("fanout", "int32"), ("body_size", "int64"), ("publish_ts", "ts"), ("deliver_ts", "ts"),
        ("redelivered", "bool"), ("reason", "string"),
    ),
    ROUTE_CAPTURE: (
        ("v", "int16"), ("node", "string"), ("ts", "ts"), ("vhost", "string"), ("msg_seq", "int64"),
        ("exchange", "string"), ("routing_key", "string"), ("headers_json", "string"), ("queues", "strings"),
    ),
}  # fmt: skip


def spark_schema(table: str) -> T.StructType:
    return T.StructType([T.StructField(name, _TYPES[kind], True) for name, kind in COLUMNS[table]])


@dataclass
class Journal:
    root: str
    events: DataFrame | None
    deliveries: DataFrame | None
    route_capture: DataFrame | None


def is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def _local(path: str) -> Path:
    return Path(urlparse(path).path if path.startswith("file:") else path)


def _detect_format(table_dir: Path) -> str | None:
    for current, _dirs, files in os.walk(table_dir):
        if os.path.basename(current).startswith((".", "_")):
            continue
        for name in files:
            if name.startswith((".", "_")):
                continue
            if name.endswith(".parquet"):
                return "parquet"
            if name.endswith(".jsonl"):
                return "jsonl"
    return None


def read_table(spark: SparkSession, root: str, table: str, fmt: str = "auto") -> DataFrame | None:
    """One table of the journal at ``root``, or None when the journal has no such files."""
    path = f"{root.rstrip('/')}/{table}"
    if is_local(root):
        table_dir = _local(path)
        if not table_dir.is_dir():
            return None
        detected = _detect_format(table_dir)
        if detected is None:
            return None
        fmt = detected if fmt == "auto" else fmt
    elif fmt == "auto":
        fmt = "parquet"
    try:
        if fmt == "jsonl":
            frame = spark.read.schema(spark_schema(table)).json(path)
        else:
            frame = spark.read.parquet(path)
    except AnalysisException as error:
        if "PATH_NOT_FOUND" in str(error) or "UNABLE_TO_INFER_SCHEMA" in str(error):
            return None
        raise AnalyticsError(f"cannot read {path}: {error}") from None
    if "v" not in frame.columns:
        raise AnalyticsError(f"{path} is not a WarrenMQ journal table (no schema-version column 'v')")
    versions = sorted(row[0] for row in frame.select("v").distinct().collect())
    if versions and versions != [SCHEMA_VERSION]:
        raise AnalyticsError(
            f"schema version mismatch in {path}: files have version(s) {versions}, "
            f"this pipeline reads version {SCHEMA_VERSION}"
        )
    missing = [name for name, _ in COLUMNS[table] if name not in frame.columns]
    if missing:
        raise AnalyticsError(f"{path}: columns missing for schema version {SCHEMA_VERSION}: {missing}")
    for name, kind in COLUMNS[table]:
        if kind == "ts" and fmt == "jsonl":
            frame = frame.withColumn(name, F.timestamp_micros(F.col(name)))
    return frame


def _check_remote_root(spark: SparkSession, root: str) -> None:
    """``root`` on the cluster's filesystem (HDFS, S3, …) exists, asked through Hadoop's FileSystem API."""
    jvm: Any = spark.sparkContext._jvm
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(root)
    try:
        exists = path.getFileSystem(hadoop_conf).exists(path)
    except Py4JJavaError as error:
        scheme = urlparse(root).scheme
        text = str(error)
        # No FileSystem for the scheme at all, or one Hadoop knows by name whose jar is missing (s3a).
        if "No FileSystem for scheme" in text or "FileSystem not found" in text:
            raise AnalyticsError(
                f"no Hadoop filesystem for scheme {scheme!r} (journal {root}): add its connector to Spark, "
                "e.g. --packages org.apache.hadoop:hadoop-aws:<Spark's Hadoop version> for s3a"
            ) from None
        raise
    if not exists:
        raise AnalyticsError(f"journal path not found on the cluster's filesystem: {root}")


def load_journal(spark: SparkSession, root: str, fmt: str = "auto") -> Journal:
    """Every table of the journal at ``root``; AnalyticsError when the path is missing or holds nothing."""
    if is_local(root) and not _local(root).exists():
        raise AnalyticsError(f"journal path does not exist: {root}")
    if not is_local(root):
        _check_remote_root(spark, root)
    journal = Journal(
        root,
        read_table(spark, root, EVENTS, fmt),
        read_table(spark, root, DELIVERIES, fmt),
        read_table(spark, root, ROUTE_CAPTURE, fmt),
    )
    if journal.events is None and journal.deliveries is None and journal.route_capture is None:
        raise AnalyticsError(
            f"no journal files under {root} (expected events/, deliveries/ or route_capture/ holding "
            ".parquet or .jsonl files written by `warrenmq serve --journal-dir`)"
        )
    return journal
