"""Fixtures shared by every suite: a WarrenMQ broker process on port 0, or an external broker for
differential runs.

``WARRENMQ_TEST_URL=amqp://guest:guest@127.0.0.1:5672/`` points the client-level suites
(integration, tutorials)
at another broker, e.g. a real RabbitMQ, to check that the tests themselves encode RabbitMQ's behaviour.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pika
import pytest
from hypothesis import settings

# The RabbitMQ 4.0.5 oracle and WarrenMQ on its profile, one of each per test process, for every suite.
from tests.compat.rabbitmq4_fixtures import (  # noqa: F401
    rabbitmq4_node,
    rabbitmq4_url,
    warrenmq_40,
    warrenmq_40_url,
)
from tests.jvm import SHORT_RUN_JVM_OPTIONS

# A private PostgreSQL cluster for the suites that run on both stores (tests/postgres; skips without it).
from tests.postgres.fixtures import postgres_cluster, postgres_dsn  # noqa: F401
from tests.schedule import file_seconds, make_scheduler, order_longest_first

# Broker processes started by the suites keep everything in memory unless a test gives --data-dir itself
# (`warrenmq serve` would otherwise store under ./warrenmq-data, shared by parallel workers).
os.environ.setdefault("WARRENMQ_DATA_DIR", "none")

# Hypothesis's per-example deadline (200 ms by default) is a wall-clock assertion: on two cores shared with
# servers, Spark and compilers an example can take longer without anything being wrong. Timing is measured in
# the benchmarks, never asserted in tests, so the suite's profile has none; a failure still prints the seed
# and the falsifying example (print_blob) to replay it.
settings.register_profile("warrenmq", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "warrenmq"))
# Every Spark driver the tests start (the local session of tests/analytics, `warrenmq analytics` runs,
# spark-submit) runs on the short-run JVM options: spark-submit's launcher gives SPARK_SUBMIT_OPTS to the
# driver's JVM. Tests that set the variable themselves add to these (tests/analytics/test_cluster.py).
os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_RUN_JVM_OPTIONS)
# And every Maven run (the client matrix's and Testcontainers' Java builds): mvn gives MAVEN_OPTS to its JVM.
os.environ.setdefault("MAVEN_OPTS", SHORT_RUN_JVM_OPTIONS)
# Brokers started by the tests open rabbitmq_prometheus's endpoint on an ephemeral port, never on 15692.
os.environ.setdefault("WARRENMQ_PROMETHEUS_PORT", "0")
# Nor do they read this machine's /etc/rabbitmq (a RabbitMQ installed as the oracle may have a rabbitmq.conf
# or enabled_plugins there): the default paths move under a prefix that does not exist.
os.environ.setdefault("WARRENMQ_SYS_PREFIX", "/nonexistent/warrenmq-tests")
# Nor do they share the machine's node registry (epmd's part, broker/config/node_registry.py): each test
# process (each xdist worker) registers its brokers in a directory of its own, so that a CLI run by one test
# never finds another worker's node of the default name, and a SIGKILLed broker leaves no file in /tmp.
# Set, not setdefault: xdist's workers inherit the controller's environment, and with setdefault all three
# kept the controller's directory. A `rabbitmq-diagnostics` run by one worker then found the rabbit@localhost
# another worker had just started (a memory alarm test's probe reported no alarm, a ping failed).
os.environ["WARRENMQ_REGISTRY_DIR"] = tempfile.mkdtemp(prefix="warrenmq-test-nodes-")


@dataclass
class BrokerProcess:
    """A `warrenmq serve` child process; ``url`` is ready to use once the fixture hands it over."""

    process: subprocess.Popen[str]
    host: str
    port: int
    management_port: int | None = None
    ready: dict[str, object] = field(default_factory=dict)  # the readiness line (e.g. "recovered" counts)

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{self.host}:{self.port}/"

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 10.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def run_broker_cli(*args: str, timeout_s: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m broker <args>`` run to its end, output captured as text; the exit code is the test's."""
    return subprocess.run(
        [sys.executable, "-m", "broker", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        cwd=cwd,
    )


def start_broker_process(*extra_args: str, env: dict[str, str] | None = None) -> BrokerProcess:
    """Start `python -m broker serve --port 0` and wait for its one-line JSON readiness report on stdout."""
    # An ephemeral management port unless the test chose one: parallel brokers must not fight over 15672.
    management = [] if "--management-port" in extra_args else ["--management-port", "0"]
    cmd = [
        sys.executable,
        "-m",
        "broker",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        *management,
        *extra_args,
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if not os.environ.get("WARRENMQ_TEST_LOGS") else None,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdout is not None
    ready: dict[str, Any] = {"event": "standby"}
    # A node on a PostgreSQL store (--store) reports "standby" first, then "ready" once elected (broker/ha).
    while ready.get("event") == "standby":
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=10)
            raise RuntimeError(f"broker exited with {proc.returncode} before reporting readiness: {cmd}")
        ready = json.loads(line)
    return BrokerProcess(
        process=proc,
        host=ready["amqp_host"],
        port=int(ready["amqp_port"]),
        management_port=ready.get("management_port"),
        ready=ready,
    )


@pytest.fixture(scope="session")
def amqp_url() -> Iterator[str]:
    """The URL of a broker shared by the whole session (WarrenMQ unless WARRENMQ_TEST_URL says otherwise)."""
    external = os.environ.get("WARRENMQ_TEST_URL")
    if external:
        yield external
        return
    broker = start_broker_process()
    try:
        yield broker.url
    finally:
        broker.stop()


def url_pika_params(url: str, **overrides: Any) -> pika.ConnectionParameters:
    """pika parameters for an ``amqp://`` URL, with short timeouts so that nothing can hang a test."""
    parsed = urlparse(url)
    settings: dict[str, Any] = {
        "host": parsed.hostname or "127.0.0.1",
        "port": parsed.port or 5672,
        "virtual_host": (parsed.path[1:] or "/") if parsed.path else "/",
        "credentials": pika.PlainCredentials(parsed.username or "guest", parsed.password or "guest"),
        "connection_attempts": 1,
        "socket_timeout": 5,
    }
    settings.update(overrides)
    return pika.ConnectionParameters(**settings)


@pytest.fixture
def amqp_params(amqp_url: str) -> dict[str, object]:
    """Host, port, user, password and vhost of ``amqp_url`` for clients that take them apart."""
    parsed = urlparse(amqp_url)
    return {
        "host": parsed.hostname or "127.0.0.1",
        "port": parsed.port or 5672,
        "username": parsed.username or "guest",
        "password": parsed.password or "guest",
        "vhost": (parsed.path[1:] or "/") if parsed.path else "/",
    }


@pytest.fixture
def unique() -> str:
    """A name prefix unique to the test, so tests sharing a broker never see each other's entities."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def broker_factory() -> Iterator[object]:
    """Start dedicated WarrenMQ processes with custom flags (heartbeat, frame_max, signals); stopped after
    the test.
    """
    started: list[BrokerProcess] = []

    def factory(*extra_args: str) -> BrokerProcess:
        broker = start_broker_process(*extra_args)
        started.append(broker)
        return broker

    yield factory
    for broker in started:
        broker.stop()


def _plugin_entry_point_installed() -> bool:
    from importlib.metadata import entry_points

    return any(ep.name == "warrenmq" for ep in entry_points(group="pytest11"))


# The plugin is registered by the `pytest11` entry point once the project is (re)installed; a venv installed
# from an older checkout lacks it, so load it by module name then (loading it twice would be an error).
if not _plugin_entry_point_installed():
    pytest_plugins = ["broker.testing.pytest_plugin"]


# Tracing roughly doubles the time of code that runs in the test process. The in-process suites run again on
# the pure-Python build under coverage (`make pytest-pure`), where every module they reach is traceable
# Python, so on the compiled build they run untraced (pytest-cov's no_cover); the whole-broker suites stay
# traced here.
_TRACED_ON_THE_PURE_RUN = ("unit", "property", "component")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the analytics files as one unit (tests/schedule.py); other modes unchanged."""
    return make_scheduler(config, log) if config.getvalue("dist") == "loadfile" else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Under pytest-xdist (a worker has workerinput) the longest files go to the workers first, so that the
    # short ones even out the end of the run (tests/schedule.py); every worker sorts the same way.
    if hasattr(config, "workerinput"):
        order_longest_first(items, file_seconds())
    if os.environ.get("WARRENMQ_PURE", "") not in ("", "0"):
        return
    root = Path(__file__).resolve().parent
    for item in items:
        parts = item.path.resolve().relative_to(root).parts if item.path.is_relative_to(root) else ()
        if parts and parts[0] in _TRACED_ON_THE_PURE_RUN:
            item.add_marker(pytest.mark.no_cover)
