"""The CLIs find a node by its name alone, as RabbitMQ's find theirs through epmd: brokers on ephemeral ports
(AMQP, management, Prometheus and the distribution/CLI port), CLIs run with a clean environment (no
RABBITMQ_* or WARRENMQ_* variable; only WARRENMQ_REGISTRY_DIR isolates the registry of this test, and the
last test uses the default registry). Each command reports the node's real ports: at first, after a restart
on new ports, after a SIGKILL (the stale entry is ignored) and with two nodes on one machine picked by -n."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
import pytest

from broker.config.node_registry import entry_path, registry_dir

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "rabbitmqctl": "broker.ctl.rabbitmqctl",
    "rabbitmq-diagnostics": "broker.ctl.diagnostics",
    "rabbitmq-plugins": "broker.ctl.plugins",
}
SHORT_HOST = socket.gethostname().split(".")[0]
DEFAULT_NODE = f"rabbit@{SHORT_HOST}"


def _clean(home: Path, registry: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "WARRENMQ_", "PYTEST_"))}
    env["HOME"] = str(home)  # the Erlang cookie the node creates and the CLIs read
    if registry is not None:
        env["WARRENMQ_REGISTRY_DIR"] = str(registry)
    return env


@dataclass
class Node:
    process: subprocess.Popen[bytes]
    ready: dict[str, Any]
    name: str

    @property
    def ports(self) -> dict[str, int]:
        """The node's listeners by RabbitMQ protocol name, from its ready line."""
        keys = {
            "amqp_port": "amqp",
            "dist_port": "clustering",
            "management_port": "http",
            "prometheus_port": "http/prometheus",
        }
        return {protocol: int(self.ready[key]) for key, protocol in keys.items()}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)


def start_node(base: Path, env: dict[str, str], name: str | None = None) -> Node:
    """A broker on ephemeral ports (--port 0 gives an ephemeral distribution port too), its ready line
    polled from its output file."""
    base.mkdir(parents=True, exist_ok=True)
    out = base / f"stdout-{uuid.uuid4().hex[:8]}"
    server_env = dict(env)
    if name is not None:
        server_env["RABBITMQ_NODENAME"] = name  # the server's environment, never the CLIs'
    ephemeral = ("--port", "0", "--management-port", "0", "--prometheus-port", "0")
    with out.open("wb") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "broker", "serve", *ephemeral, "--data-dir", "none"],
            cwd=ROOT,
            env=server_env,
            stdout=stdout,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith('{"event": "ready"'):
                return Node(process, json.loads(line), name or DEFAULT_NODE)
        if process.poll() is not None:
            raise RuntimeError(f"broker exited with {process.returncode}: {out.read_text()}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"no ready line in 60 s: {out.read_text()}")


def cli(tool: str, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from {TOOLS[tool]} import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,  # `-c` imports this checkout's broker
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_found(node: Node, env: dict[str, str], *node_args: str) -> None:
    """list_queues, status, check_port_connectivity and ping reach ``node`` and report its real ports."""
    queue = f"registry-{uuid.uuid4().hex[:8]}"
    amqp = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", node.ports["amqp"]))
    try:
        amqp.channel().queue_declare(queue)
        queues = cli("rabbitmqctl", *node_args, "list_queues", "-q", env=env)
    finally:
        amqp.close()
    assert queues.returncode == 0, queues.stderr
    assert queue in queues.stdout.split()

    status = cli("rabbitmq-diagnostics", *node_args, "status", "--formatter", "json", env=env)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert (report["node_name"], report["pid"]) == (node.name, node.process.pid)
    assert {item["protocol"]: item["port"] for item in report["listeners"]} == node.ports
    text = cli("rabbitmq-diagnostics", *node_args, "status", env=env)
    for protocol, port in node.ports.items():
        assert f"port: {port}, protocol: {protocol}, purpose: " in text.stdout

    ports = cli("rabbitmq-diagnostics", *node_args, "check_port_connectivity", env=env)
    assert ports.returncode == 0, ports.stderr
    listed = ", ".join(str(port) for port in sorted(node.ports.values()))
    assert ports.stdout.splitlines()[-1] == f"Successfully connected to ports {listed} on node {node.name}."

    ping = cli("rabbitmq-diagnostics", *node_args, "-q", "ping", env=env)
    assert (ping.returncode, ping.stdout) == (0, "Ping succeeded\n")


def assert_not_running(name: str, env: dict[str, str], stale_ports: dict[str, int]) -> None:
    """A node that is not running fails as RabbitMQ's CLIs fail (exit 69, the unreachable text), on the
    fallback distribution port, never on the stale entry's."""
    for tool, command in (("rabbitmqctl", "list_queues"), ("rabbitmq-diagnostics", "status")):
        result = cli(tool, "-n", name, command, env=env)
        assert result.returncode == 69
        assert result.stderr.startswith(f"Error: unable to perform an operation on node '{name}'.")
        assert f"attempted to contact: [{name}] on 127.0.0.1:" in result.stderr
        assert f":{stale_ports['clustering']}:" not in result.stderr


@pytest.fixture
def isolated(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    return tmp_path, _clean(home, tmp_path / "registry")


def test_found_at_start_after_a_restart_and_after_sigkill(isolated: tuple[Path, dict[str, str]]) -> None:
    base, env = isolated
    path = entry_path(DEFAULT_NODE, base / "registry")
    first = start_node(base, env)
    try:
        assert json.loads(path.read_text())["ports"] == first.ports  # written before the ready line
        assert_found(first, env)
    finally:
        first.stop()
    assert not path.exists()  # removed at a clean stop
    assert_not_running(DEFAULT_NODE, env, first.ports)

    second = start_node(base, env)
    try:
        assert second.ports != first.ports
        assert_found(second, env)
        second.process.send_signal(signal.SIGKILL)
        # Killed and not yet reaped (a zombie keeps its pid), then reaped: the entry stays, stale.
        deadline = time.monotonic() + 30
        while Path(f"/proc/{second.process.pid}/stat").read_text().split(") ")[1][0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert_not_running(DEFAULT_NODE, env, second.ports)
    finally:
        second.stop()
    assert path.exists()
    assert_not_running(DEFAULT_NODE, env, second.ports)

    third = start_node(base, env)  # replaces the stale entry
    try:
        assert_found(third, env)
    finally:
        third.stop()


def test_two_nodes_on_one_machine_picked_by_n(isolated: tuple[Path, dict[str, str]]) -> None:
    base, env = isolated
    alpha = start_node(base / "alpha", env, f"alpha@{SHORT_HOST}")
    try:
        beta = start_node(base / "beta", env, "beta@localhost")
        try:
            assert_found(alpha, env, "-n", "alpha")  # the host part defaults to this machine's short name
            assert_found(beta, env, "-n", "beta@localhost")
            listed = cli("rabbitmq-diagnostics", "--node=beta@localhost", "listeners", env=env)
            assert listed.stdout.splitlines()[0] == (
                "Asking node beta@localhost to report its protocol listeners ..."
            )
            assert str(beta.ports["http/prometheus"]) in listed.stdout
            assert str(alpha.ports["http/prometheus"]) not in listed.stdout
            # No node runs under the default name here.
            assert cli("rabbitmqctl", "list_queues", env=env).returncode == 69
        finally:
            beta.stop()
    finally:
        alpha.stop()


def test_the_default_registry_needs_no_environment(tmp_path: Path) -> None:
    """As a user runs it: neither the node nor the CLIs name a registry directory."""
    home = tmp_path / "home"
    home.mkdir()
    env = _clean(home, None)
    name = f"registry-{uuid.uuid4().hex[:12]}@localhost"
    node = start_node(tmp_path, env, name)
    try:
        assert entry_path(name, registry_dir(env)).exists()
        assert_found(node, env, "-n", name)
    finally:
        node.stop()
    assert not entry_path(name, registry_dir(env)).exists()
