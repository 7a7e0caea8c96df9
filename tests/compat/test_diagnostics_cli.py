"""rabbitmq-diagnostics output, WarrenMQ's against RabbitMQ's own CLI (Debian's 3.10) on a private node: the
same commands, in the same state, give the same text, JSON and exit code once node names and ports are
replaced by placeholders."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_port

from .rabbitmq_node import RabbitMQNode, rabbitmq_available

pytestmark = [pytest.mark.compat, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ORACLE_CLI = "/usr/lib/rabbitmq/bin/rabbitmq-diagnostics"
DIAGNOSTICS = "import sys; from broker.ctl.diagnostics import main; sys.exit(main())"


class Side:
    def __init__(self, argv: list[str], env: dict[str, str], node: str) -> None:
        self.argv, self.env, self.node = argv, env, node

    def run(self, *args: str, normal: bool = True) -> tuple[int, str, str]:
        result = subprocess.run(
            [*self.argv, *args], env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        if not normal:
            return result.returncode, result.stdout, result.stderr
        return result.returncode, self._normal(result.stdout), self._normal(result.stderr)

    def _normal(self, text: str) -> str:
        return re.sub(r"\b\d{4,5}\b", "<port>", text.replace(self.node, "<node>"))


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    if not rabbitmq_available():
        pytest.skip("no RabbitMQ to compare with: rabbitmq-server is not installed")
    node = RabbitMQNode(tmp_path_factory.mktemp("rabbitmq-cli"))
    node.start()
    try:
        yield Side([ORACLE_CLI], node._environment(), node.node_name)
    finally:
        node.stop()


@pytest.fixture(scope="module")
def warrenmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    base = tmp_path_factory.mktemp("warrenmq-cli")
    conf = base / "rabbitmq.conf"
    conf.write_text(f"listeners.tcp.default = 127.0.0.1:{free_port()}\n")
    # No plugin, as the oracle node: its listeners are the distribution (CLI) port and AMQP.
    (base / "enabled_plugins").write_text("[].\n")
    node = "warrenmq-cli@localhost"
    env = {
        **os.environ,
        "RABBITMQ_CONFIG_FILE": str(conf),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
        "RABBITMQ_NODENAME": node,
        "RABBITMQ_DIST_PORT": str(free_port()),  # the CLI channel
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    process.stdout.readline()
    try:
        yield Side([sys.executable, "-c", DIAGNOSTICS], env, node)
    finally:
        process.terminate()
        process.wait(timeout=10)


SAME = [
    ("ping",),
    ("-q", "ping"),
    ("ping", "--formatter", "json"),
    ("check_running",),
    ("-q", "check_running"),
    ("check_running", "--formatter", "json"),
    ("check_local_alarms",),
    ("-q", "check_local_alarms"),
    ("check_local_alarms", "--formatter", "json"),
    ("check_port_connectivity",),
    ("-q", "check_port_connectivity"),
]


@pytest.mark.parametrize("argv", SAME, ids=" ".join)
def test_a_healthy_node_answers_as_rabbitmqs_cli_does(
    oracle: Side, warrenmq: Side, argv: tuple[str, ...]
) -> None:
    assert warrenmq.run(*argv) == oracle.run(*argv)


def test_port_connectivity_json_has_rabbitmqs_shape(oracle: Side, warrenmq: Side) -> None:
    def shape(side: Side) -> tuple[int, Any]:
        code, out, _ = side.run("check_port_connectivity", "--formatter", "json", normal=False)
        report = json.loads(out)
        return code, (sorted(report), report["result"], [sorted(item) for item in report["listeners"]])

    # Both: the distribution (CLI) listener, then AMQP.
    assert shape(warrenmq) == shape(oracle)


@pytest.mark.parametrize("argv", [("ping", "-t", "2"), ("-q", "ping", "-t", "2")], ids=" ".join)
def test_an_unreachable_node_fails_as_rabbitmqs_cli_does(
    oracle: Side, warrenmq: Side, argv: tuple[str, ...]
) -> None:
    # Nothing answers at nobody@127.0.0.2 for WarrenMQ (its broker binds 127.0.0.1); no node "nobody" runs
    # for RabbitMQ.
    dead_oracle = Side(oracle.argv, oracle.env, "nobody@localhost")
    dead_warrenmq = Side(warrenmq.argv, warrenmq.env, "nobody@127.0.0.2")
    ours = dead_warrenmq.run("-n", dead_warrenmq.node, *argv)
    assert ours == dead_oracle.run("-n", dead_oracle.node, *argv)
    assert ours[0] == 69
