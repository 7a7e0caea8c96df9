"""rabbitmq-diagnostics / rabbitmqctl against a running WarrenMQ, found as in a container: the CLIs get the
server's environment and rabbitmq.conf and no arguments; ``-n`` overrides the node."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from tests.conftest import BrokerProcess
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
RABBITMQCTL = "import sys; from broker.ctl.rabbitmqctl import main; sys.exit(main())"


def _env(tmp_path: Path) -> dict[str, str]:
    conf = tmp_path / "rabbitmq.conf"
    conf.write_text(
        f"listeners.tcp.default = 127.0.0.1:{free_port()}\nmanagement.tcp.port = {free_port()}\n"
        "prometheus.tcp.port = 0\ndefault_user = app\ndefault_pass = pw\n"
    )
    return {
        "RABBITMQ_CONFIG_FILE": str(conf),
        "RABBITMQ_NODENAME": "rabbit@localhost",
        "RABBITMQ_DIST_PORT": str(free_port()),  # the CLI channel (an ephemeral port + 20000 may not fit)
    }


def cli(tool: str, *argv: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    module = {"rabbitmq-diagnostics": "broker.ctl.diagnostics", "rabbitmqctl": "broker.ctl.rabbitmqctl"}[tool]
    code = f"import sys; from {module} import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, dict[str, str]]]:
    env = _env(tmp_path_factory.mktemp("diagnostics"))
    # No flags: the broker takes its listeners from the same rabbitmq.conf the CLIs read.
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    served = BrokerProcess(process=process, host="127.0.0.1", port=ready["amqp_port"], ready=ready)
    try:
        yield served, env
    finally:
        served.stop()


def test_ping_and_check_running_with_no_arguments(served: tuple[BrokerProcess, dict[str, str]]) -> None:
    _, env = served
    quiet = cli("rabbitmq-diagnostics", "-q", "ping", env=env)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "Ping succeeded\n", "")
    loud = cli("rabbitmq-diagnostics", "check_running", env=env)
    assert loud.returncode == 0
    assert loud.stdout.splitlines() == [
        "Checking if RabbitMQ is running on node rabbit@localhost ...",
        "RabbitMQ on node rabbit@localhost is fully booted and running",
    ]
    as_json = cli("rabbitmq-diagnostics", "check_running", "--formatter", "json", env=env)
    assert json.loads(as_json.stdout) == {
        "message": "RabbitMQ on node rabbit@localhost is fully booted and running"
    }


def test_port_connectivity_and_alarms(served: tuple[BrokerProcess, dict[str, str]]) -> None:
    broker, env = served
    ports = cli("rabbitmq-diagnostics", "check_port_connectivity", "--formatter", "json", env=env)
    assert ports.returncode == 0
    report = json.loads(ports.stdout)
    assert report["result"] == "ok"
    # The node's own listeners, in RabbitMQ 3.10's order: the plugins' HTTP listeners (the ephemeral
    # prometheus port of prometheus.tcp.port = 0 included), distribution (the CLI channel), AMQP.
    assert [(item["protocol"], item["port"]) for item in report["listeners"]] == [
        ("http", broker.ready["management_port"]),
        ("http/prometheus", broker.ready["prometheus_port"]),
        ("clustering", int(env["RABBITMQ_DIST_PORT"])),
        ("amqp", broker.port),
    ]
    # A full login with the configured default user (app/pw from rabbitmq.conf).
    alarms = cli("rabbitmq-diagnostics", "-q", "check_local_alarms", env=env)
    assert (alarms.returncode, alarms.stdout) == (0, "Node rabbit@localhost reported no local alarms\n")


def test_status_reports_the_emulated_release_and_the_configuration(
    served: tuple[BrokerProcess, dict[str, str]],
) -> None:
    _, env = served
    result = cli("rabbitmq-diagnostics", "status", "--formatter", "json", env=env)
    assert result.returncode == 0
    status = json.loads(result.stdout)
    assert (status["rabbitmq_version"], status["product_name"], status["warrenmq_version"]) == (
        "3.13.7",
        "RabbitMQ",
        "0.1.0",
    )
    assert status["config_files"] == [env["RABBITMQ_CONFIG_FILE"]]
    assert status["alarms"] == []


def test_memory_breakdown_measures_the_queued_messages(served: tuple[BrokerProcess, dict[str, str]]) -> None:
    """rabbitmq-diagnostics memory_breakdown: RabbitMQ's categories, largest first; ``binary`` holds the
    bodies of the messages the queues hold (measured, so it follows what is published and purged), and the
    categories add up to the resident set, as with RabbitMQ's rss strategy."""
    broker, env = served
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://app:pw@127.0.0.1:{broker.port}/"))
    try:
        channel = connection.channel()
        channel.queue_declare("memory-breakdown")
        channel.queue_purge("memory-breakdown")
        before = json.loads(
            cli("rabbitmq-diagnostics", "memory_breakdown", "--formatter", "json", env=env).stdout
        )
        for _ in range(500):
            channel.basic_publish("", "memory-breakdown", b"m" * 4000)
        channel.queue_declare("memory-breakdown", passive=True)  # a round trip: every publish is queued
        result = cli("rabbitmq-diagnostics", "memory_breakdown", "--formatter", "json", env=env)
        text = cli("rabbitmq-diagnostics", "memory_breakdown", "--unit", "mb", env=env)
        channel.queue_delete("memory-breakdown")
    finally:
        connection.close()
    assert result.returncode == 0
    after = json.loads(result.stdout)
    grown = after["binary"]["bytes"] - before["binary"]["bytes"]
    assert 500 * 4000 <= grown <= 500 * 4100  # the bodies and their content headers
    assert after["queue_procs"]["bytes"] > before["queue_procs"]["bytes"]
    sizes = [row["bytes"] for row in after.values()]
    assert sizes == sorted(sizes, reverse=True)
    lines = text.stdout.splitlines()
    assert lines[0] == "Reporting memory breakdown on node rabbit@localhost..."
    assert {line.split(":")[0] for line in lines[1:]} == set(after)
    assert all(re.fullmatch(r"[a-z_]+: [0-9.]+ mb \([0-9.]+%\)", line) for line in lines[1:])
    conf = Path(env["RABBITMQ_CONFIG_FILE"]).read_text()
    port = re.search(r"management.tcp.port = (\d+)", conf)
    assert port is not None
    request = urllib.request.Request(f"http://127.0.0.1:{port.group(1)}/api/nodes")
    request.add_header("Authorization", "Basic " + base64.b64encode(b"app:pw").decode())
    with urllib.request.urlopen(request) as response:
        node = json.load(response)[0]["name"]
    request = urllib.request.Request(f"http://127.0.0.1:{port.group(1)}/api/nodes/{node}?memory=true")
    request.add_header("Authorization", "Basic " + base64.b64encode(b"app:pw").decode())
    with urllib.request.urlopen(request) as response:
        memory = json.load(response)["memory"]
    assert memory["strategy"] == "rss"
    assert sum(value for value in memory.values() if isinstance(value, int)) == memory["total"]["rss"]


def test_node_override_and_an_unreachable_node_exit_69(served: tuple[BrokerProcess, dict[str, str]]) -> None:
    _, env = served
    result = cli("rabbitmq-diagnostics", "-n", "rabbit@127.0.0.2", "ping", "-t", "2", env=env)
    assert result.returncode == 69
    assert result.stderr == "Error:\nFailed to connect and authenticate to rabbit@127.0.0.2 in 2000 ms\n"
    running = cli(
        "rabbitmq-diagnostics", "--node=rabbit@127.0.0.2", "-q", "check_running", "-t", "2", env=env
    )
    assert running.returncode == 69
    assert running.stderr.startswith("Error: unable to perform an operation on node 'rabbit@127.0.0.2'.")


def test_usage_errors_exit_64(served: tuple[BrokerProcess, dict[str, str]]) -> None:
    _, env = served
    assert cli("rabbitmq-diagnostics", "no_such_command", env=env).returncode == 64
    assert cli("rabbitmq-diagnostics", "--formatter", "erlang", "ping", env=env).returncode == 64
    assert cli("rabbitmqctl", "no_such_command", env=env).returncode == 64
    assert cli("rabbitmqctl", "add_user", "only-a-name", env=env).returncode == 64


def test_await_startup_waits_for_a_broker_that_starts_later(tmp_path: Path) -> None:
    env = _env(tmp_path)
    waiting = subprocess.Popen(
        [sys.executable, "-c", RABBITMQCTL, "await_startup"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    broker = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        stdout, stderr = waiting.communicate(timeout=60)
        assert (waiting.returncode, stdout, stderr) == (0, "", "")
    finally:
        broker.terminate()
        broker.wait(timeout=10)
