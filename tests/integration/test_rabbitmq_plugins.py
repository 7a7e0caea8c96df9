"""rabbitmq-plugins against a running WarrenMQ: the enabled_plugins file rewritten as RabbitMQ's CLI writes
it, the exchange-type plugins switched on the running broker at once (as RabbitMQ's online enable starts
them), ``--offline`` only writing the file, RabbitMQ's texts and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pika
import pika.exceptions
import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = "import sys; from broker.ctl.plugins import main; sys.exit(main())"


def plugins_cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PLUGINS, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _declare_random(port: int) -> str:
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
    try:
        connection.channel().exchange_declare("spread", "x-random")
        return "ok"
    except pika.exceptions.ChannelClosedByBroker as error:
        return str(error.args[1])
    finally:
        if connection.is_open:
            connection.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[dict[str, str], int]]:
    (tmp_path / "home").mkdir()
    conf = tmp_path / "rabbitmq.conf"
    conf.write_text(f"listeners.tcp.default = 127.0.0.1:{free_port()}\nmanagement.tcp.port = {free_port()}\n")
    (tmp_path / "enabled_plugins").write_text("[rabbitmq_management].\n")
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "RABBITMQ_CONFIG_FILE": str(conf),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "enabled_plugins"),
        "RABBITMQ_NODENAME": "rabbit@localhost",
        "RABBITMQ_DIST_PORT": str(free_port()),  # the CLI channel
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    try:
        yield env, int(ready["amqp_port"])
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_list_marks_enabled_implicit_and_running(served: tuple[dict[str, str], int]) -> None:
    env, _ = served
    listed = plugins_cli("list", "-e", env=env)
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == [
        'Listing plugins with pattern ".*" ...',
        " Configured: E = explicitly enabled; e = implicitly enabled",
        " | Status: * = running on rabbit@localhost",
        " |/",
        "[E*] rabbitmq_management       3.13.7",
        "[e*] rabbitmq_management_agent 3.13.7",
        "[e*] rabbitmq_web_dispatch     3.13.7",
    ]


def test_online_enable_and_disable_switch_the_exchange_type(served: tuple[dict[str, str], int]) -> None:
    env, port = served
    assert _declare_random(port) == "PRECONDITION_FAILED - unknown exchange type 'x-random'"
    enabled = plugins_cli("enable", "rabbitmq_random_exchange", env=env)
    assert enabled.returncode == 0
    assert enabled.stdout.splitlines() == [
        "Enabling plugins on node rabbit@localhost:",
        "rabbitmq_random_exchange",
        "The following plugins have been configured:",
        "  rabbitmq_management",
        "  rabbitmq_management_agent",
        "  rabbitmq_random_exchange",
        "  rabbitmq_web_dispatch",
        "Applying plugin configuration to rabbit@localhost...",
        "The following plugins have been enabled:",
        "  rabbitmq_random_exchange",
        "",
        "started 1 plugins.",
    ]
    path = Path(env["RABBITMQ_ENABLED_PLUGINS_FILE"])
    assert path.read_text() == "[rabbitmq_management,rabbitmq_random_exchange].\n"
    assert _declare_random(port) == "ok"
    again = plugins_cli("enable", "rabbitmq_random_exchange", env=env)
    assert again.stdout.splitlines()[-1] == "Plugin configuration unchanged."
    disabled = plugins_cli("disable", "rabbitmq_random_exchange", env=env)
    assert disabled.stdout.splitlines()[-1] == "stopped 1 plugins."
    assert path.read_text() == "[rabbitmq_management].\n"


def test_offline_enable_only_writes_the_file_and_unknown_plugins_exit_70(
    served: tuple[dict[str, str], int],
) -> None:
    env, port = served
    offline = plugins_cli("enable", "--offline", "rabbitmq_random_exchange", env=env)
    assert offline.stdout.splitlines()[-2:] == [
        "set 4 plugins.",
        "Offline change; changes will take effect at broker restart.",
    ]
    assert _declare_random(port) == "PRECONDITION_FAILED - unknown exchange type 'x-random'"
    unknown = plugins_cli("enable", "nosuch_plugin", env=env)
    assert (unknown.returncode, unknown.stderr) == (70, "Error:\n{:plugins_not_found, [:nosuch_plugin]}\n")
    # The next online change applies the whole file, the offline change with it (as RabbitMQ's does); a
    # plugin WarrenMQ serves only from the next start says so.
    prometheus = plugins_cli("enable", "rabbitmq_prometheus", env=env)
    assert prometheus.stdout.splitlines()[-2:] == [
        "started 1 plugins.",
        "WarrenMQ: rabbitmq_prometheus will change at the next broker start.",
    ]
    assert _declare_random(port) == "ok"
