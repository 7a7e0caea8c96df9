"""Where a job's results go: Parquet data plus a small summary as JSON and CSV.

``summary.json`` is the mark of a complete output: a job removes the old one before it starts and writes the
new one last (locally by rename), so a failed run never leaves one that looks complete.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from broker.analytics.schema import is_local

SUMMARIES = ("summary.json", "summary.csv")


def clear_summaries(out: str, spark: SparkSession | None = None) -> None:
    """Remove ``out``'s summaries of an earlier run (remote outputs through Hadoop's filesystem API)."""
    base = out.rstrip("/")
    if is_local(out):
        folder = Path(base.removeprefix("file:"))
        for name in SUMMARIES:
            (folder / name).unlink(missing_ok=True)
        return
    if spark is None:
        return
    jvm: Any = spark.sparkContext._jvm
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    for name in SUMMARIES:
        path = jvm.org.apache.hadoop.fs.Path(f"{base}/{name}")
        path.getFileSystem(hadoop_conf).delete(path, True)


def write_results(
    spark: SparkSession, out: str, data: DataFrame, summary: dict[str, Any], rows: list[dict[str, Any]]
) -> None:
    """``out``/data (Parquet, one file: results are small), ``out``/summary.json and ``out``/summary.csv
    (``rows``, one line each). On a cluster URI the summaries are written through Spark as text."""
    base = out.rstrip("/")
    data.coalesce(1).write.mode("overwrite").parquet(f"{base}/data")
    summary_text = json.dumps(summary, indent=2, sort_keys=True, default=str)
    csv_text = _csv(rows)
    if is_local(out):
        folder = Path(base.removeprefix("file:"))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.csv").write_text(csv_text, encoding="utf-8")
        partial = folder / ".summary.json.partial"
        partial.write_text(summary_text + "\n", encoding="utf-8")
        os.replace(partial, folder / "summary.json")
        return
    for name, text in (("summary.csv", csv_text), ("summary.json", summary_text)):
        frame = spark.createDataFrame([(text,)], "value string")
        frame.coalesce(1).write.mode("overwrite").text(f"{base}/{name}")


def _csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    if rows:
        fields = list(rows[0])
        writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: row.get(key) for key in fields})
    return buffer.getvalue()
