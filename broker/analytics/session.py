"""The SparkSession every job uses: UTC windows, Arrow on, small shuffles, the UI off."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and tells Python its gateway port; its --master must then win."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_spark(
    master: str | None = None,
    app_name: str = "warrenmq-analytics",
    shuffle_partitions: int = 8,
    driver_memory: str | None = None,
    progress: bool = False,
) -> SparkSession:
    if master is None and not under_spark_submit():
        master = DEFAULT_MASTER
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the hostname may resolve to loopback: no WARN
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # Python workers must import the same broker package as the driver (replay runs broker.core there).
        root = str(Path(__file__).resolve().parents[2])
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if root not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, paths)])
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    return (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "true" if progress else "false")
        .getOrCreate()
    )
