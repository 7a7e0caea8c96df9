"""Bad cluster input gets one clear line on stderr and a non-zero exit; --verbose keeps the trace; a failed
job leaves no summary.json that could pass for a complete output."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from broker.analytics import schema
from broker.analytics.errors import AnalyticsError
from tests.analytics.standalone import StandaloneCluster, spark_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

WARRENMQ = [sys.executable, "-m", "broker", "analytics"]


def analytics(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WARRENMQ, *args], capture_output=True, text=True, env=env, timeout=500, check=False
    )


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python with nothing installed: executors running it cannot import pyarrow."""
    folder = tmp_path_factory.mktemp("bare-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return str(folder / "bin" / "python")


def test_an_unreachable_master_is_one_line_before_any_jvm_starts(live_journal: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = analytics(
        "ttd",
        "--journal",
        str(live_journal),
        "--out",
        str(tmp_path / "ttd"),
        "--master",
        f"spark://127.0.0.1:{port}",
    )
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(
        f"warrenmq analytics: error: Spark master unreachable at spark://127.0.0.1:{port} (127.0.0.1:{port}: "
    )


def test_a_missing_journal_path_is_one_line(tmp_path: Path) -> None:
    done = analytics("fanout", "--journal", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert (
        one_line(done.stderr)
        == f"warrenmq analytics: error: journal path does not exist: {tmp_path / 'nowhere'}"
    )


def test_a_malformed_definitions_file_names_its_line(live_journal: Path, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"vhosts": [{"name": "/"}]}))
    bad.write_text('{\n  "vhosts": [{"name": "/"}],\n  "queues": [,]\n}\n')
    done = analytics(
        "replay", "--journal", str(live_journal), "--out", str(tmp_path / "replay"),
        "--defs-a", str(good), "--defs-b", str(bad),
    )  # fmt: skip
    assert done.returncode == 2
    assert "bad.json: definitions are not valid JSON: Expecting value: line 3 column 14" in one_line(
        done.stderr
    )


def test_a_journal_missing_from_the_clusters_filesystem_is_a_clear_error(spark: Any) -> None:
    """Non-local roots are checked through Hadoop's FileSystem API (here its file: implementation)."""
    with pytest.raises(AnalyticsError) as raised:
        schema._check_remote_root(spark, "file:///nonexistent/warrenmq-journal")
    assert str(raised.value) == (
        "journal path not found on the cluster's filesystem: file:///nonexistent/warrenmq-journal"
    )


def test_a_filesystem_without_its_connector_is_named(spark: Any) -> None:
    with pytest.raises(AnalyticsError, match=r"no Hadoop filesystem for scheme 's3a' .*hadoop-aws"):
        schema._check_remote_root(spark, "s3a://bucket/journal")


def test_an_executor_import_failure_is_one_line_with_the_log_and_no_summary(
    cluster: StandaloneCluster, bare_python: str, live_journal: Path, live_definitions: tuple[Path, Path],
    tmp_path: Path,
) -> None:  # fmt: skip
    out = tmp_path / "replay"
    out.mkdir()
    (out / "summary.json").write_text('{"job": "replay", "from": "an earlier run"}')
    env = cluster.env({"PYSPARK_PYTHON": bare_python, "WARRENMQ_ANALYTICS_LOG_DIR": str(tmp_path / "logs")})
    done = analytics(
        "replay", "--journal", str(live_journal), "--out", str(out), "--master", cluster.url,
        "--defs-a", str(live_definitions[0]), "--defs-b", str(live_definitions[1]),
        "--conf", "spark.task.maxFailures=1", env=env,
    )  # fmt: skip
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith("warrenmq analytics: error: executors could not import 'pyarrow': ")
    log = Path(line.rsplit("(full log: ", 1)[1].rstrip(")"))
    assert log.parent == tmp_path / "logs"
    assert "ModuleNotFoundError: No module named 'pyarrow'" in log.read_text()
    assert not (out / "summary.json").exists()


def test_verbose_keeps_spark_log_and_the_trace(
    bare_python: str, live_journal: Path, live_definitions: tuple[Path, Path], tmp_path: Path
) -> None:
    env = spark_env(tmp_path, {"PYSPARK_PYTHON": bare_python})
    done = analytics(
        "replay", "--journal", str(live_journal), "--out", str(tmp_path / "replay"), "--master", "local[1]",
        "--defs-a", str(live_definitions[0]), "--defs-b", str(live_definitions[1]), "--verbose",
        "--conf", "spark.task.maxFailures=1", env=env,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert "ModuleNotFoundError: No module named 'pyarrow'" in done.stderr
    assert not (tmp_path / "replay" / "summary.json").exists()
