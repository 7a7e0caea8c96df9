"""Spark failures told in one line: the cause a user can act on, with the JVM's log and the Python trace
kept in a file (the driver's log4j2 goes there instead of the terminal unless ``--verbose``)."""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
_NO_PYTHON = re.compile(r'Cannot run program "([^"]+)"')
_NO_SCHEME = re.compile(
    r'No FileSystem for scheme "?([\w+.-]+)"?|Class org\.apache\.hadoop\.fs\.(\w+)\.\w+FileSystem not found'
)
_NOT_FOUND = re.compile(r"(?:FileNotFoundException|PATH_NOT_FOUND)\W+(.*)")
_PYTHON_ERROR = re.compile(r"^(\w+(?:Error|Exception): .+)$", re.MULTILINE)
_PACK_HINT = (
    "ship the executors' Python with `warrenmq analytics pack` and --python-env ARCHIVE "
    "(spark-submit: --archives ARCHIVE#environment --conf spark.pyspark.python=./environment/bin/python)"
)
_MAX_CHARS = 400

_LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
"""


def log_file(job: str) -> Path:
    """Where this run's full log goes: ``$WARRENMQ_ANALYTICS_LOG_DIR`` or the temp dir, one file per run."""
    folder = Path(os.environ.get("WARRENMQ_ANALYTICS_LOG_DIR") or Path(tempfile.gettempdir()) / "warrenmq")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"analytics-{job}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"


def log4j_config(log: Path) -> Path:
    """A log4j2 configuration sending the driver JVM's whole log to ``log`` and nothing to the terminal."""
    config = log.with_suffix(".log4j2.properties")
    config.write_text(_LOG4J2.format(path=log), encoding="utf-8")
    return config


def explain(error: BaseException) -> str:
    """One line naming the cause of a Spark (JVM or executor) failure."""
    text = str(error)
    found = _MODULE.search(text)
    if found:
        module = found.group(1).split(".")[0]
        if module in ("broker", "protocol"):
            return f"executors could not import {module!r}: the project's zip did not reach them"
        return f"executors could not import {module!r}: {_PACK_HINT}"
    found = _NO_PYTHON.search(text)
    if found:
        return f"executors could not start Python {found.group(1)!r}: {_PACK_HINT}"
    if "All masters are unresponsive" in text:
        return "Spark master unreachable: all masters are unresponsive"
    found = _NO_SCHEME.search(text)
    if found:
        scheme = found.group(1) or found.group(2)
        return (
            f"no Hadoop filesystem for scheme {scheme!r}: add its connector to Spark "
            "(s3a: --packages org.apache.hadoop:hadoop-aws:<Spark's Hadoop version>)"
        )
    found = _NOT_FOUND.search(text)
    if found:
        return _short(
            f"journal file not found on the cluster's filesystem: {found.group(1).strip()} "
            "(executors must read the journal at the same path: HDFS, S3 or a shared mount)"
        )
    errors = _PYTHON_ERROR.findall(text)
    if errors:
        return _short(f"a Spark task failed: {errors[-1]}")
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    return _short(f"Spark failed: {first}")


def _short(line: str) -> str:
    return line if len(line) <= _MAX_CHARS else line[: _MAX_CHARS - 1] + "…"
