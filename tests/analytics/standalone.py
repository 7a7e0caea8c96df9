"""A Spark standalone cluster (one master, one worker) on loopback, started from the installed pyspark.

`spark-class org.apache.spark.deploy.master.Master` and `...worker.Worker` run as child processes with
ephemeral ports (read back from their logs), their own SPARK_CONF_DIR, work and local directories under
``root``, and are stopped by PID. Used by the cluster tests (one cluster per test session) and by the scale
benchmark (tests/analytics/scale_bench.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_UI_PORT = re.compile(r"Successfully started service '(?:MasterUI|WorkerUI)' on port (\d+)")
_REGISTERED = re.compile("Successfully registered with master")
# Spark's own log4j2 defaults print INFO to stderr; the daemons' logs are files here, read for ports.
_LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
"""


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_env(conf_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every Spark process of the cluster and its clients run with."""
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_NO_DAEMONIZE": "1",
    }
    # A PYSPARK_PYTHON inherited from the test run would hide a missing --archives on the executors.
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "PYSPARK_GATEWAY_PORT"):
        env.pop(name, None)
    env.update(extra or {})
    return env


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def wait_for(self, pattern: re.Pattern[str], timeout_s: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.text()
            found = pattern.search(text)
            if found:
                return found
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{text[-3000:]}")
            time.sleep(0.2)
        raise TimeoutError(
            f"{self.name} did not log {pattern!r} within {timeout_s} s:\n{self.text()[-3000:]}"
        )

    def stop(self, timeout_s: float = 20.0) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass
class StandaloneCluster:
    """One master and one worker; ``url`` is the spark:// URL, ``ui`` the master's web UI. With
    ``cores_per_app`` the master gives each application at most that many cores (spark.deploy.defaultCores),
    so that applications share the worker instead of queueing for it. ``jvm_options`` go to the master's,
    the worker's and every executor's JVM (JAVA_TOOL_OPTIONS: the worker starts its executors with its own
    environment; each JVM notes the variable in its log)."""

    root: Path
    worker_cores: int = 1
    cores_per_app: int | None = None
    worker_memory: str = "1g"
    jvm_options: str = ""
    url: str = ""
    ui: str = ""
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return spark_env(self.conf_dir, extra)

    def _jvm_env(self) -> dict[str, str]:
        return {"JAVA_TOOL_OPTIONS": self.jvm_options} if self.jvm_options else {}

    def _spawn(self, name: str, *args: str, extra_env: dict[str, str] | None = None) -> Daemon:
        log = self.root / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env({**self._jvm_env(), **(extra_env or {})}),
                cwd=self.root,
            )
        daemon = Daemon(name, process, log)
        self.daemons.append(daemon)
        return daemon

    def start(self, timeout_s: float = 120.0) -> StandaloneCluster:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
        (self.root / "work").mkdir(exist_ok=True)
        (self.root / "local").mkdir(exist_ok=True)
        try:
            # spark-class passes SPARK_MASTER_OPTS to the master's JVM.
            opts = (
                {}
                if self.cores_per_app is None
                else {"SPARK_MASTER_OPTS": f"-Dspark.deploy.defaultCores={self.cores_per_app}"}
            )
            master = self._spawn(
                "master", "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0", extra_env=opts,
            )  # fmt: skip
            self.url = master.wait_for(_MASTER_URL, timeout_s).group(1)
            ui = master.wait_for(_UI_PORT, timeout_s)
            self.ui = f"http://127.0.0.1:{ui.group(1)}"
            worker = self._spawn(
                "worker", "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                "--work-dir", str(self.root / "work"), self.url,
            )  # fmt: skip
            worker.wait_for(_REGISTERED, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            daemon.stop()

    def state(self) -> dict[str, Any]:
        """The master's /json/ view: workers, activeapps, completedapps."""
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=10) as response:
            state: dict[str, Any] = json.load(response)
        return state

    def completed_apps(self) -> dict[str, dict[str, Any]]:
        """The finished applications by id."""
        return {app["id"]: app for app in self.state()["completedapps"]}

    def executor_logs(self, app_id: str) -> str:
        """What the application's executors wrote to stderr on the worker (their task logs)."""
        folder = self.root / "work" / app_id
        return "\n".join(
            log.read_text(encoding="utf-8", errors="replace") for log in sorted(folder.glob("*/stderr"))
        )
