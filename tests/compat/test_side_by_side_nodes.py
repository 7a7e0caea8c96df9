"""Two `rabbitmq-server` stand-ins (WarrenMQ's console script) side by side, Debian's RabbitMQ beside them,
each started as a CI fixture starts RabbitMQ: nothing but RABBITMQ_NODENAME, RABBITMQ_NODE_PORT,
RABBITMQ_DIST_PORT, RABBITMQ_MNESIA_BASE, RABBITMQ_LOG_BASE, RABBITMQ_PID_FILE, an empty
RABBITMQ_ENABLED_PLUGINS_FILE and HOME (for the Erlang cookie). Each is driven with its own
``rabbitmqctl -n NODE``: the output and exit codes match RabbitMQ's, no stand-in opens a management port,
and nothing is written outside the directories given (the working directory stays empty, HOME holds only
the cookie)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pika
import pytest

from broker.server.sockets import has_ipv6
from tests.ports import free_port

from .rabbitmq_node import RABBITMQ_SERVER, RabbitMQNode, rabbitmq_available

pytestmark = [pytest.mark.compat, pytest.mark.slow]

BIN = Path(sys.executable).parent
ORACLE_CTL = str(RABBITMQ_SERVER.parent / "rabbitmqctl")


def node_environment(base: Path, node: str, port: int, dist_port: int) -> dict[str, str]:
    """The fixture's environment, and nothing else of this process's (PATH aside, for erl)."""
    for sub in ("home", "cwd"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    (base / "enabled_plugins").write_text("")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base / "home"),
        "RABBITMQ_NODENAME": node,
        "RABBITMQ_NODE_PORT": str(port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
        "RABBITMQ_LOG_BASE": str(base / "log"),
        "RABBITMQ_PID_FILE": str(base / "node.pid"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
    }


@dataclass
class Node:
    name: str
    port: int
    env: dict[str, str]
    ctl: str
    base: Path

    def run(self, *args: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [self.ctl, "-n", self.name, *args],
            env=self.env,
            cwd=self.base / "cwd",
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return done.returncode, _normal(done.stdout, self.name), _normal(done.stderr, self.name)


def _normal(text: str, node: str) -> str:
    """Node names masked, table rows compared as a set (RabbitMQ lists them in ETS order)."""
    lines = text.replace(node, "<node>").splitlines()
    header = next((i for i, line in enumerate(lines) if line.split("\t")[0] == "name"), len(lines))
    return "\n".join(lines[: header + 1] + sorted(lines[header + 1 :]))


class _OracleNode(RabbitMQNode):
    """Debian's RabbitMQ with the fixture's environment only."""

    def _environment(self) -> dict[str, str]:
        return node_environment(self.base_dir, self.node_name, self.port, self.dist_port)

    @property
    def log_file(self) -> Path:
        return self.base_dir / "log" / f"{self.node_name}.log"

    def _output(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def _launch(self, timeout_s: float) -> None:
        env = self._environment()
        self.process = subprocess.Popen(
            [str(RABBITMQ_SERVER)],
            env=env,
            cwd=self.base_dir / "cwd",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._wait_ready(timeout_s)


def _start_warrenmq(base: Path, name: str) -> tuple[subprocess.Popen[str], Node]:
    port, dist_port = free_port(), free_port()
    node = f"{name}-{port}@localhost"
    env = node_environment(base, node, port, dist_port)
    process = subprocess.Popen(
        [str(BIN / "rabbitmq-server")],
        env=env,
        cwd=base / "cwd",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    assert (ready["amqp_port"], ready["dist_port"], ready["management_port"]) == (port, dist_port, None)
    return process, Node(node, port, env, str(BIN / "rabbitmqctl"), base)


@dataclass
class Nodes:
    oracle: Node
    standins: list[tuple[subprocess.Popen[str], Node]]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    if not rabbitmq_available():
        pytest.skip("Debian's rabbitmq-server is not installed")
    oracle = _OracleNode(tmp_path_factory.mktemp("oracle"))
    oracle.start()
    standins = [_start_warrenmq(tmp_path_factory.mktemp(name), name) for name in ("alpha", "beta")]
    try:
        yield Nodes(
            Node(oracle.node_name, oracle.port, oracle._environment(), ORACLE_CTL, oracle.base_dir), standins
        )
    finally:
        for process, _ in standins:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
        oracle.stop()


def _declare(port: int) -> None:
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
    channel = connection.channel()
    channel.queue_declare("side-by-side", durable=True)
    channel.basic_publish("", "side-by-side", b"m", pika.BasicProperties(delivery_mode=2))
    channel.basic_publish("", "side-by-side", b"m", pika.BasicProperties(delivery_mode=2))
    connection.close()


COMMANDS: list[tuple[str, ...]] = [
    ("list_queues",),
    ("list_exchanges",),
    ("add_vhost", "side-vhost"),
    ("add_vhost", "side-vhost"),
    ("list_exchanges", "-p", "side-vhost", "name"),
    ("delete_vhost", "side-vhost"),
    ("delete_vhost", "side-vhost"),
    ("list_queues", "-p", "no-such-vhost"),
]


def test_rabbitmqctl_drives_each_node_by_name_as_rabbitmqs_does(nodes: Nodes) -> None:
    for node in (nodes.oracle, *(node for _, node in nodes.standins)):
        _declare(node.port)
    mismatches = []
    for command in COMMANDS:
        theirs = nodes.oracle.run(*command)
        for _, node in nodes.standins:
            ours = node.run(*command)
            if ours != theirs:
                mismatches.append((node.name, command, theirs, ours))
    for name, command, theirs, ours in mismatches:
        print(f"{name} {command}\nRabbitMQ: {theirs!r}\nWarrenMQ: {ours!r}")
    assert mismatches == []


def test_each_node_keeps_its_files_where_rabbitmqs_variables_say(nodes: Nodes) -> None:
    for process, node in nodes.standins:
        base = node.base
        assert (base / "node.pid").read_text().strip() == str(process.pid)
        assert (base / "mnesia" / node.name).is_dir()
        assert (base / "log" / f"{node.name}.log").stat().st_size > 0
        assert list((base / "cwd").iterdir()) == []
        assert [path.name for path in (base / "home").iterdir()] == [".erlang.cookie"]
        if has_ipv6():  # the default listener is dual-stack: a client reaching localhost as ::1 gets in
            pika.BlockingConnection(pika.ConnectionParameters("::1", node.port)).close()
    first, second = (node for _, node in nodes.standins)
    # Each node answers to its own name only: one node's CLI environment names the other's port.
    refused = Node(second.name, second.port, first.env, first.ctl, first.base).run("list_queues")
    assert refused[0] == 69
    assert re.search(r"this is node \S+, not \S+", refused[2])


def test_stop_stops_each_node_as_rabbitmqs_does(nodes: Nodes) -> None:
    theirs = nodes.oracle.run("stop")
    for process, node in nodes.standins:
        assert node.run("stop") == theirs
        assert process.wait(timeout=30) == 0
        assert not (node.base / "node.pid").exists()
        gone = node.run("list_queues")
        assert gone[0] == 69
        assert gone[2].startswith("Error: unable to perform an operation on node '<node>'.")
    gone = nodes.oracle.run("list_queues")
    assert gone[0] == 69
    assert gone[2].startswith("Error: unable to perform an operation on node '<node>'.")
