"""A node's listeners with the management and prometheus plugins on, WarrenMQ's against RabbitMQ 3.10's on a
private node: `rabbitmq-diagnostics listeners`, `status` and `check_port_connectivity` (protocols, purposes,
order, JSON keys) and /api/overview's ``listeners`` (protocols, order, socket_opts keys). Ports and node
names differ by construction and are left out."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.management.rabbitmq_management_node import ManagementNode
from tests.ports import free_port

from .rabbitmq_node import rabbitmq_available

pytestmark = [pytest.mark.compat, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ORACLE_CLI = "/usr/lib/rabbitmq/bin/rabbitmq-diagnostics"
DIAGNOSTICS = "import sys; from broker.ctl.diagnostics import main; sys.exit(main())"
PLUGINS = "rabbitmq_management,rabbitmq_prometheus"


@dataclass
class PrometheusNode(ManagementNode):
    prometheus_port: int = field(default_factory=free_port)

    def _pick_ports(self) -> None:
        super()._pick_ports()
        self.prometheus_port = free_port()

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        env["RABBITMQ_ENABLED_PLUGINS"] = PLUGINS
        return env

    def _launch(self, timeout_s: float) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "management.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\nmanagement.tcp.port = {self.http_port}\n"
            f"prometheus.tcp.port = {self.prometheus_port}\n"
        )
        # The management node's _launch would rewrite the file without the prometheus port.
        super(ManagementNode, self)._launch(timeout_s)


@dataclass
class Side:
    cli: list[str]
    env: dict[str, str]
    node: str
    http_url: str

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.cli, "-n", self.node, *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def json(self, *args: str) -> Any:
        result = self.run(*args, "--formatter", "json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def overview_listeners(self) -> list[dict[str, Any]]:
        request = urllib.request.Request(f"{self.http_url}/api/overview")
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        with urllib.request.urlopen(request, timeout=30) as response:
            listeners: list[dict[str, Any]] = json.load(response)["listeners"]
        return listeners


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    if not rabbitmq_available():
        pytest.skip("no RabbitMQ to compare with: rabbitmq-server is not installed")
    node = PrometheusNode(tmp_path_factory.mktemp("rabbitmq-listeners"))
    node.start()
    try:
        yield Side([ORACLE_CLI], node._environment(), node.node_name, node.http_url)
    finally:
        node.stop()


@pytest.fixture(scope="module")
def warrenmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    base = tmp_path_factory.mktemp("warrenmq-listeners")
    conf = base / "rabbitmq.conf"
    conf.write_text(
        f"listeners.tcp.default = 127.0.0.1:{free_port()}\nmanagement.tcp.port = {free_port()}\n"
        f"prometheus.tcp.port = {free_port()}\n"
    )
    (base / "enabled_plugins").write_text(f"[{PLUGINS}].\n")
    node = "warrenmq-listeners@localhost"
    env = {
        **os.environ,
        "HOME": str(base),
        "RABBITMQ_CONFIG_FILE": str(conf),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
        "RABBITMQ_NODENAME": node,
        "WARRENMQ_REGISTRY_DIR": str(base / "registry"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    try:
        yield Side(
            [sys.executable, "-c", DIAGNOSTICS], env, node, f"http://127.0.0.1:{ready['management_port']}"
        )
    finally:
        process.terminate()
        process.wait(timeout=10)


def _cli_shape(listeners: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    # The HTTP listeners' interface is left out: RabbitMQ binds them to every interface, WarrenMQ to the
    # AMQP listener's (127.0.0.1 here).
    return [
        (
            tuple(sorted(item)),
            item["protocol"],
            item["purpose"],
            None if item["protocol"].startswith("http") else item["interface"],
        )
        for item in listeners
    ]


@pytest.mark.parametrize("command", ["listeners", "status", "check_port_connectivity"])
def test_the_cli_lists_the_listeners_as_rabbitmq_does(oracle: Side, warrenmq: Side, command: str) -> None:
    ours, theirs = warrenmq.json(command), oracle.json(command)
    assert _cli_shape(ours["listeners"]) == _cli_shape(theirs["listeners"])
    if command != "status":
        assert sorted(ours) == sorted(theirs)
    assert [item["protocol"] for item in ours["listeners"]] == [
        "http",
        "http/prometheus",
        "clustering",
        "amqp",
    ]


def test_listener_lines_read_as_rabbitmqs(oracle: Side, warrenmq: Side) -> None:
    def lines(side: Side) -> list[str]:
        result = side.run("listeners")
        assert result.returncode == 0, result.stderr
        # "Interface: I, port: P, protocol: X, purpose: Y" without the port (and the HTTP interfaces).
        return [
            line.split(", port: ")[0].split(": ")[0] + " " + line.split(", protocol: ")[1]
            for line in result.stdout.splitlines()[1:]
            if line
        ]

    assert lines(warrenmq) == lines(oracle)


def test_overview_lists_the_listeners_as_rabbitmq_does(oracle: Side, warrenmq: Side) -> None:
    def shape(side: Side) -> list[tuple[Any, ...]]:
        return [
            (
                item["protocol"],
                tuple(sorted(item)),
                sorted(item["socket_opts"]) if isinstance(item["socket_opts"], dict) else item["socket_opts"],
                item["socket_opts"].get("cowboy_opts") if isinstance(item["socket_opts"], dict) else None,
            )
            for item in side.overview_listeners()
            if item["protocol"] != "amqp"  # RabbitMQ's AMQP socket options are Erlang's (backlog, linger...)
        ]

    assert shape(warrenmq) == shape(oracle)
