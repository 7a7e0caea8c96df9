"""rabbitmqctl against a running WarrenMQ, as a container's scripts run it: no credentials, the broker found
from the same environment and rabbitmq.conf, over its CLI channel on the distribution port, authenticated by
the Erlang cookie the broker wrote in $HOME/.erlang.cookie (mode 0400). What RabbitMQ's own CLI prints is
compared in tests/compat/test_rabbitmqctl_cli.py and tests/compat/test_side_by_side_nodes.py; here the parts
that are WarrenMQ's: the cookie, a broker without any plugin, connections closed by name, definitions
exported and imported."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pika
import pika.exceptions
import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
RABBITMQCTL = "import sys; from broker.ctl.rabbitmqctl import main; sys.exit(main())"


def _env(base: Path, management: bool = True) -> dict[str, str]:
    (base / "home").mkdir(exist_ok=True)
    conf = base / "rabbitmq.conf"
    port = f"management.tcp.port = {free_port()}\n" if management else ""
    conf.write_text(f"listeners.tcp.default = 127.0.0.1:{free_port()}\n{port}")
    env = {
        **os.environ,
        "HOME": str(base / "home"),
        "RABBITMQ_CONFIG_FILE": str(conf),
        "RABBITMQ_NODENAME": "rabbit@localhost",
        # An ephemeral AMQP port + 20000 may pass 65535: the CLI channel's own port.
        "RABBITMQ_DIST_PORT": str(free_port()),
    }
    if not management:
        (base / "enabled_plugins").write_text("[].\n")
        env["RABBITMQ_ENABLED_PLUGINS_FILE"] = str(base / "enabled_plugins")
    env.pop("RABBITMQ_ERLANG_COOKIE", None)
    return env


def ctl(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RABBITMQCTL, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, object]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], dict[str, object]]]:
    env = _env(tmp_path_factory.mktemp("rabbitmqctl"))
    process, ready = _serve(env)
    try:
        yield env, ready
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_broker_writes_a_private_cookie_the_cli_logs_in_with(
    served: tuple[dict[str, str], dict[str, object]],
) -> None:
    env, _ = served
    cookie = Path(env["HOME"]) / ".erlang.cookie"
    assert stat.S_IMODE(cookie.stat().st_mode) == 0o400
    assert len(cookie.read_text()) == 20
    listed = ctl("-q", "list_vhosts", env=env)
    assert (listed.returncode, listed.stdout) == (0, "name\n/\n")


def test_a_wrong_cookie_is_refused_with_exit_69(served: tuple[dict[str, str], dict[str, object]]) -> None:
    env, _ = served
    result = ctl("list_users", env={**env, "RABBITMQ_ERLANG_COOKIE": "NOTTHECOOKIE"})
    assert result.returncode == 69
    assert "the node refused the CLI: check that the Erlang cookie" in result.stderr
    # A caller with no cookie at all is refused too, before it connects.
    result = ctl("list_users", env={**env, "HOME": str(Path(env["HOME"]).parent)})
    assert result.returncode == 69
    assert "no Erlang cookie" in result.stderr
    # Another node's name on this port is refused (Erlang distribution checks the name too).
    result = ctl("-n", "other@localhost", "list_users", env=env)
    assert result.returncode == 69
    assert "this is node rabbit@localhost, not other@localhost" in result.stderr


def test_users_created_by_the_cli_log_in_over_amqp(served: tuple[dict[str, str], dict[str, object]]) -> None:
    env, ready = served
    assert ctl("add_user", "app", "s3cret", env=env).returncode == 0
    assert ctl("set_permissions", "app", ".*", ".*", ".*", env=env).returncode == 0
    params = pika.ConnectionParameters(
        "127.0.0.1", int(str(ready["amqp_port"])), credentials=pika.PlainCredentials("app", "s3cret")
    )
    connection = pika.BlockingConnection(params)
    try:
        connection.channel().queue_declare("from-app")
        listed = ctl("-q", "list_connections", "name", "user", env=env)
        name = next(line.split("\t")[0] for line in listed.stdout.splitlines() if line.endswith("\tapp"))
        closed = ctl("close_connection", name, "go away", env=env)
        assert closed.returncode == 0
        # The reason given is the close text, as RabbitMQ's rabbit_networking:close_connection sends it.
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed_by:
            connection.process_data_events(1.0)
        assert closed_by.value.args == (320, "CONNECTION_FORCED - go away")
    finally:
        if connection.is_open:
            connection.close()
    queues = ctl("-s", "list_queues", "name", "messages", env=env)
    assert "from-app\t0" in queues.stdout.splitlines()
    assert ctl("authenticate_user", "app", "wrong", env=env).returncode == 65


def test_definitions_export_and_import(
    served: tuple[dict[str, str], dict[str, object]], tmp_path: Path
) -> None:
    env, _ = served
    assert ctl("add_vhost", "exported", env=env).returncode == 0
    path = tmp_path / "definitions.json"
    assert ctl("export_definitions", str(path), env=env).returncode == 0
    definitions = json.loads(path.read_text())
    assert "exported" in [v["name"] for v in definitions["vhosts"]]
    assert ctl("delete_vhost", "exported", env=env).returncode == 0
    imported = ctl("import_definitions", str(path), env=env)
    assert imported.returncode == 0
    assert "exported" in ctl("-s", "list_vhosts", env=env).stdout.splitlines()


def test_with_every_plugin_disabled_the_cli_still_works(tmp_path: Path) -> None:
    env = _env(tmp_path, management=False)
    process, ready = _serve(env)
    try:
        assert ready["management_port"] is None  # no management plugin: no HTTP listener at all
        assert ctl("-q", "list_queues", env=env).returncode == 0
        assert ctl("add_vhost", "no-plugins", env=env).returncode == 0
        assert "no-plugins" in ctl("-s", "list_vhosts", env=env).stdout.splitlines()
        assert ctl("-q", "ping", env=env).returncode == 0
    finally:
        process.terminate()
        process.wait(timeout=10)


def _taken_distribution_port() -> tuple[int, socket.socket]:
    """A free AMQP port and a socket listening on its derived distribution port (AMQP port + 20000). Both
    are checked: under the suite's load another process may hold the derived port of a free one."""
    while True:
        port = free_port()
        if port + 20000 > 65535:
            continue
        taken = socket.socket()
        try:
            taken.bind(("127.0.0.1", port + 20000))
        except OSError:
            taken.close()
            continue
        taken.listen()
        return port, taken


def test_a_taken_distribution_port_stops_the_node_only_when_it_was_named(tmp_path: Path) -> None:
    port, taken = _taken_distribution_port()
    env = {**_env(tmp_path), "RABBITMQ_NODE_PORT": str(port), "RABBITMQ_CONFIG_FILE": "none"}
    with taken:  # held while both nodes try the port
        # Derived (AMQP port + 20000): an ephemeral port instead, reported in the ready line.
        derived = {key: value for key, value in env.items() if key != "RABBITMQ_DIST_PORT"}
        process, ready = _serve(derived)
        process.terminate()
        process.wait(timeout=10)
        assert ready["dist_port"] not in (None, 0, port + 20000)
        # Named, as RabbitMQ: the node does not start.
        named = subprocess.run(
            [sys.executable, "-m", "broker", "serve"],
            cwd=ROOT,
            env={**env, "RABBITMQ_DIST_PORT": str(port + 20000)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert named.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port + 20000} (distribution port, CLI channel)" in named.stderr
