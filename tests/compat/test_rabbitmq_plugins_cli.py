"""rabbitmq-plugins, WarrenMQ's against RabbitMQ 3.10's on a private node with rabbitmq_management enabled:
the same list/enable/disable commands give the same output, exit code and enabled_plugins file once node
names and release versions are placeholders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port

from .rabbitmq_node import RabbitMQNode, rabbitmq_available

# Each command starts an Erlang VM for RabbitMQ's own CLI (1-2 s on a quiet machine, several under load):
# a test of dozens of commands took 39 s quietly and passed the default 120 s bound under a load of 12.
pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
ORACLE_CLI = "/usr/lib/rabbitmq/bin/rabbitmq-plugins"
PLUGINS = "import sys; from broker.ctl.plugins import main; sys.exit(main())"


class Side:
    def __init__(self, argv: list[str], env: dict[str, str], node: str, version: str, plugins: Path) -> None:
        self.argv, self.env, self.node, self.version, self.plugins = argv, env, node, version, plugins

    def run(self, *args: str) -> tuple[int, str, str, str]:
        result = subprocess.run(
            [*self.argv, *args], env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        return result.returncode, self._normal(result.stdout), result.stderr, self.plugins.read_text()

    def _normal(self, text: str) -> str:
        return text.replace(self.node, "<node>").replace(self.version, "<version>")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    if not rabbitmq_available():
        pytest.skip("no RabbitMQ to compare with: rabbitmq-server is not installed")
    node = RabbitMQNode(tmp_path_factory.mktemp("plugins-oracle"), plugins=("rabbitmq_management",))
    node.start()
    try:
        env = node._environment()
        yield Side([ORACLE_CLI], env, node.node_name, "3.10.8", Path(env["RABBITMQ_ENABLED_PLUGINS_FILE"]))
    finally:
        node.stop()


@pytest.fixture(scope="module")
def warrenmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    base = tmp_path_factory.mktemp("plugins-warrenmq")
    (base / "home").mkdir()
    conf = base / "rabbitmq.conf"
    conf.write_text(f"listeners.tcp.default = 127.0.0.1:{free_port()}\nmanagement.tcp.port = {free_port()}\n")
    plugins = base / "enabled_plugins"
    plugins.write_text("[rabbitmq_management].\n")
    node = "warrenmq-plugins@localhost"
    env = {
        **os.environ,
        "HOME": str(base / "home"),
        "RABBITMQ_CONFIG_FILE": str(conf),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(plugins),
        "RABBITMQ_NODENAME": node,
        "RABBITMQ_DIST_PORT": str(free_port()),  # the CLI channel
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    json.loads(process.stdout.readline())
    try:
        yield Side([sys.executable, "-c", PLUGINS], env, node, "3.13.7", plugins)
    finally:
        process.terminate()
        process.wait(timeout=10)


COMMANDS = [
    ("list",),
    ("list", "-e"),
    ("list", "-E"),
    ("list", "exchange"),
    ("enable", "rabbitmq_random_exchange"),
    ("enable", "rabbitmq_random_exchange"),
    ("list", "-e"),
    ("disable", "rabbitmq_random_exchange"),
    ("enable", "--offline", "rabbitmq_consistent_hash_exchange"),
    ("disable", "--offline", "rabbitmq_consistent_hash_exchange"),
    ("enable", "nosuch_plugin"),
    ("-q", "list", "-e"),
]


def test_rabbitmq_plugins_matches_rabbitmq(oracle: Side, warrenmq: Side) -> None:
    mismatches = []
    for command in COMMANDS:
        theirs, ours = oracle.run(*command), warrenmq.run(*command)
        if theirs != ours:
            mismatches.append((command, theirs, ours))
    for command, theirs, ours in mismatches:
        print(f"{command}\nRabbitMQ: {theirs!r}\nWarrenMQ: {ours!r}")
    assert mismatches == []
