"""The SparkSession every job uses: UTC windows, Arrow on, small shuffles, the UI off; on a cluster, the
project's code shipped to executors and, when given, the packed Python environment they run."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from broker.analytics.errors import AnalyticsError
from broker.analytics.pyfiles import project_zip, source_root

DEFAULT_MASTER = "local[*]"
ENV_LINK = "environment"  # the directory --archives ENV#environment unpacks into, in each executor's cwd


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and tells Python its gateway port; its --master must then win."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def check_master_reachable(master: str, timeout_s: float = 5.0) -> None:
    """A standalone master (``spark://h1:p1[,h2:p2]``) that accepts TCP, or a clear error at once: Spark
    itself retries registering for a minute and then only says "All masters are unresponsive"."""
    if not master.startswith("spark://"):
        return
    errors = []
    for address in master.removeprefix("spark://").split(","):
        parsed = urlparse(f"spark://{address}")
        try:
            with socket.create_connection((parsed.hostname or "", parsed.port or 7077), timeout=timeout_s):
                return
        except OSError as error:
            errors.append(f"{address}: {error.strerror or error}")
    raise AnalyticsError(f"Spark master unreachable at {master} ({'; '.join(errors)})")


def _local_python_path() -> None:
    """Local Python workers are children of this process: the same interpreter, the same broker package."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the hostname may resolve to loopback: no WARN
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(source_root())
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, paths)])


def _start(builder: SparkSession.Builder, jvm_log: Path) -> SparkSession:
    """getOrCreate with file descriptor 2 pointing at ``jvm_log`` while the JVM is launched: the child keeps
    that stderr for its life, this process gets its own back."""
    sys.stderr.flush()
    saved = os.dup(2)
    sink = os.open(jvm_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(sink, 2)
        return builder.getOrCreate()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(sink)


def build_spark(
    master: str | None = None,
    app_name: str = "warrenmq-analytics",
    shuffle_partitions: int = 8,
    driver_memory: str | None = None,
    progress: bool = False,
    python_env: str | None = None,
    conf: Mapping[str, str] | None = None,
    log_config: Path | None = None,
    jvm_log: Path | None = None,
) -> SparkSession:
    """``python_env``: an archive from `warrenmq analytics pack`, unpacked on each executor (spark.archives)
    and run as its Python; ``log_config``: a log4j2 file for the driver JVM this call starts (ignored under
    spark-submit, whose JVM is already running); ``jvm_log``: where that JVM's stderr goes (its startup
    warnings and anything else it prints), instead of the terminal."""
    if master is None and not under_spark_submit():
        master = DEFAULT_MASTER
    if master is not None:
        check_master_reachable(master)
    if master is not None and master.startswith("local"):
        _local_python_path()
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    if python_env:
        if not Path(python_env.split("#")[0]).is_file():
            raise AnalyticsError(f"Python environment archive does not exist: {python_env}")
        builder = builder.config("spark.archives", f"{python_env.split('#')[0]}#{ENV_LINK}")
        # PySpark started here reads the executors' Python from the environment, not spark.pyspark.python
        # (that setting is spark-submit's); the path is relative to each executor's working directory.
        os.environ["PYSPARK_PYTHON"] = f"./{ENV_LINK}/bin/python"
    if log_config is not None and not under_spark_submit():
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log_config}")
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "true" if progress else "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = (
        _start(builder, jvm_log)
        if jvm_log is not None and not under_spark_submit()
        else builder.getOrCreate()
    )
    running = spark.sparkContext.master or ""
    if not running.startswith("local"):
        if under_spark_submit():
            try:
                check_master_reachable(running)
            except AnalyticsError:
                spark.stop()
                raise
        # Executors elsewhere cannot import the driver's broker package: ship it (once per version).
        spark.sparkContext.addPyFile(str(project_zip()))
    return spark
