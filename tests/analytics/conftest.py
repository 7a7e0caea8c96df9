"""Session-wide fixtures of the analytics suites, each built once (a JVM start costs 5-11 s):

- ``spark``: one local SparkSession (local[2], tiny shuffles, UI off);
- ``live_journal`` / ``live_definitions``: a journal recorded from real pika traffic (full mode, routing
  captured) and the two definitions files replay compares;
- ``cluster``: a Spark standalone master and one worker (2 cores, 2 GiB) on loopback, started from the
  installed pyspark and stopped by PID at the end, its JVMs and executors on tests/jvm.py's short-run options
  (the drivers get them from SPARK_SUBMIT_OPTS, tests/conftest.py);
- ``python_env``: the executors' Python environment from `warrenmq analytics pack`.

Skipped when pyspark (the `analytics` extra) or Java is missing, so a checkout without them stays green.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.traffic import record_journal, write_definitions
from tests.jvm import SHORT_RUN_JVM_OPTIONS


def _need_spark() -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    _need_spark()
    from broker.analytics.session import build_spark

    session = build_spark("local[2]", app_name="warrenmq-tests", shuffle_partitions=2, driver_memory="1g")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def live_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_journal(tmp_path_factory.mktemp("live-journal"))


@pytest.fixture(scope="session")
def live_definitions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_definitions(tmp_path_factory.mktemp("live-definitions"))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _need_spark()
    from tests.analytics.standalone import StandaloneCluster

    # /tmp paths stay short: Spark's worker puts the application's work dirs under it.
    # A core and 1 GiB of executor for each of two applications at once (tests/analytics/test_cluster.py
    # runs its two routes side by side).
    standalone = StandaloneCluster(
        tmp_path_factory.mktemp("spark-cluster"), worker_cores=2, cores_per_app=1, worker_memory="2g",
        jvm_options=SHORT_RUN_JVM_OPTIONS,
    )  # fmt: skip
    standalone.start()
    try:
        yield standalone
    finally:
        standalone.stop()


@pytest.fixture(scope="session")
def python_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_spark()
    archive = tmp_path_factory.mktemp("python-env") / "warrenmq-env.tar.gz"
    result = subprocess.run(
        [sys.executable, "-m", "broker", "analytics", "pack", "--out", str(archive)],
        capture_output=True, text=True, check=False, env={**os.environ},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return archive
