"""Where a job's results go: Parquet data plus a small summary as JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from broker.analytics.schema import is_local


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
        (folder / "summary.json").write_text(summary_text + "\n", encoding="utf-8")
        (folder / "summary.csv").write_text(csv_text, encoding="utf-8")
        return
    for name, text in (("summary.json", summary_text), ("summary.csv", csv_text)):
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
