"""RabbitMQ's node variables and files (rabbitmq-env(5), the configure guide): where a node's data, log and
pid file go (MNESIA_BASE/MNESIA_DIR, LOG_BASE/LOGS, PID_FILE, defaults per node name), its distribution
port (AMQP port + 20000), rabbitmq-env.conf under the environment, advanced.config over rabbitmq.conf and
RABBITMQ_SERVER_START_ARGS over both; `warrenmq config show` names each source."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from broker.cli import build_parser
from broker.config.args import Loaded, config_from_loaded
from broker.config.erlang_terms import TermError, parse_app_args, parse_term
from broker.config.model import ServerConfig
from broker.config.rabbitmq_env import merged_environ
from broker.config.show import render

SHORT = socket.gethostname().split(".")[0]


def _load(
    tmp_path: Path,
    env: dict[str, str],
    conf: str = "",
    env_conf: str = "",
    advanced: str = "",
    serve: tuple[str, ...] = ("serve", "--rabbitmq-layout"),
) -> tuple[Loaded, ServerConfig]:
    """Loaded as the ``rabbitmq-server`` stand-in loads it (RabbitMQ's layout), unless ``serve`` says."""
    root = tmp_path / "root"
    (root / "etc/rabbitmq").mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("rabbitmq.conf", conf),
        ("rabbitmq-env.conf", env_conf),
        ("advanced.config", advanced),
    ):
        if text:
            (root / "etc/rabbitmq" / name).write_text(text)
    args = build_parser().parse_args(list(serve))
    loaded = Loaded(args, merged_environ({"WARRENMQ_SYS_PREFIX": str(root), **env}))
    return loaded, config_from_loaded(loaded, args)


def test_node_directories_default_per_node_name_under_rabbitmqs_paths(tmp_path: Path) -> None:
    loaded, config = _load(tmp_path, {"RABBITMQ_NODENAME": "hare"})
    root = tmp_path / "root"
    assert config.node_name == f"hare@{SHORT}"  # a short node name gets the host, as in RabbitMQ
    assert config.data_dir == f"{root}/var/lib/rabbitmq/mnesia/hare@{SHORT}"
    assert config.pid_file == f"{config.data_dir}.pid"
    assert config.log_file is None  # console unless RabbitMQ's log variables are set
    assert (config.port, config.dist_port) == (5672, 25672)
    assert loaded.resolved["dist_port"].source == "default (AMQP port + 20000)"


def test_warrenmq_serve_without_rabbitmq_variables_keeps_warrenmq_data_in_the_working_directory(
    tmp_path: Path,
) -> None:
    loaded, config = _load(tmp_path, {"RABBITMQ_NODENAME": "hare"}, serve=("serve",))
    assert (config.data_dir, config.pid_file) == ("warrenmq-data", None)
    assert loaded.resolved["data_dir"].source == "default (WarrenMQ's, in the working directory)"
    # RABBITMQ_MNESIA_BASE places it per node name for `warrenmq serve` too.
    _, placed = _load(tmp_path, {"RABBITMQ_NODENAME": "hare", "RABBITMQ_MNESIA_BASE": "/m"}, serve=("serve",))
    assert (placed.data_dir, placed.pid_file) == (f"/m/hare@{SHORT}", f"/m/hare@{SHORT}.pid")


def test_mnesia_base_log_base_and_pid_file(tmp_path: Path) -> None:
    env = {
        "RABBITMQ_NODENAME": "a@localhost",
        "RABBITMQ_NODE_PORT": "5701",
        "RABBITMQ_MNESIA_BASE": "/data/mnesia",
        "RABBITMQ_LOG_BASE": "/data/log",
        "RABBITMQ_PID_FILE": "/data/a.pid",
    }
    loaded, config = _load(tmp_path, env)
    assert (config.data_dir, config.log_file, config.pid_file) == (
        "/data/mnesia/a@localhost",
        "/data/log/a@localhost.log",
        "/data/a.pid",
    )
    assert config.dist_port == 25701
    assert loaded.resolved["data_dir"].source == "default ($RABBITMQ_MNESIA_BASE/$NODENAME)"
    assert loaded.resolved["mnesia_base"].source == "env RABBITMQ_MNESIA_BASE"


def test_mnesia_dir_and_logs_win_over_their_bases(tmp_path: Path) -> None:
    env = {
        "RABBITMQ_MNESIA_BASE": "/data/mnesia",
        "RABBITMQ_MNESIA_DIR": "/elsewhere/db",
        "RABBITMQ_LOG_BASE": "/data/log",
        "RABBITMQ_LOGS": "-",
        "RABBITMQ_DIST_PORT": "4444",
    }
    _, config = _load(tmp_path, env)
    assert (config.data_dir, config.pid_file, config.log_file) == ("/elsewhere/db", "/elsewhere/db.pid", None)
    assert config.dist_port == 4444


def test_warrenmqs_data_dir_wins_and_writes_no_pid_file_beside_it(tmp_path: Path) -> None:
    _, config = _load(tmp_path, {"WARRENMQ_DATA_DIR": "/var/lib/rabbitmq", "RABBITMQ_MNESIA_BASE": "/x"})
    assert (config.data_dir, config.pid_file) == ("/var/lib/rabbitmq", None)
    _, memory = _load(tmp_path, {"WARRENMQ_DATA_DIR": "none"})
    assert (memory.data_dir, memory.pid_file) == (None, None)


@pytest.mark.parametrize(("port", "dist_port"), [("0", 0), ("50000", 0), ("45535", 65535)])
def test_dist_port_is_ephemeral_when_the_amqp_port_gives_none(
    tmp_path: Path, port: str, dist_port: int
) -> None:
    _, config = _load(tmp_path, {"RABBITMQ_NODE_PORT": port})
    assert config.dist_port == dist_port


def test_rabbitmq_env_conf_is_under_the_environment(tmp_path: Path) -> None:
    env_conf = (
        "# comment\nNODENAME=conf@localhost\nexport NODE_PORT=5801\nMNESIA_BASE='/m'\n"
        'LOG_BASE="$MNESIA_BASE/log"\nDIST_PORT=5999\n'
    )
    loaded, config = _load(
        tmp_path, {"RABBITMQ_NODE_PORT": "5802", "RABBITMQ_DIST_PORT": ""}, env_conf=env_conf
    )
    assert (config.node_name, config.port, config.dist_port) == ("conf@localhost", 5802, 5999)
    assert (config.data_dir, config.log_file) == ("/m/conf@localhost", "/m/log/conf@localhost.log")
    assert loaded.resolved["port"].source == "env RABBITMQ_NODE_PORT"
    assert loaded.resolved["node_name"].source.endswith("rabbitmq-env.conf:2 NODENAME")
    assert loaded.resolved["dist_port"].source.endswith(
        "rabbitmq-env.conf:6 DIST_PORT"
    )  # empty env: the file


def test_conf_env_file_variable_names_the_file(tmp_path: Path) -> None:
    other = tmp_path / "other-env.conf"
    other.write_text("NODE_PORT=5901\n")
    _, config = _load(tmp_path, {"RABBITMQ_CONF_ENV_FILE": str(other)}, env_conf="NODE_PORT=5902\n")
    assert config.port == 5901


def test_start_args_set_listeners_over_advanced_config_over_rabbitmq_conf(tmp_path: Path) -> None:
    conf = "listeners.tcp.default = 5611\nmanagement.tcp.port = 15611\nheartbeat = 7\n"
    advanced = (
        "%% advanced.config\n[{rabbit, [{tcp_listeners, [5612]}, {heartbeat, 8}, {unknown_key, true}]},\n"
        " {rabbitmq_management, [{listener, [{port, 15612}]}]}].\n"
    )
    env = {
        "RABBITMQ_SERVER_START_ARGS": '-rabbit tcp_listeners [{"::1", 5613}] '
        "-rabbitmq_management listener [{port,15613}]"
    }
    loaded, config = _load(tmp_path, env, conf, advanced=advanced)
    assert (config.host, config.port, config.management_port, config.session.heartbeat_s) == (
        "::1",
        5613,
        15613,
        8,
    )
    assert loaded.resolved["port"].source == "RABBITMQ_SERVER_START_ARGS:0 listeners.tcp.1"
    assert loaded.resolved["heartbeat"].source.endswith("advanced.config:0 heartbeat")
    assert any("rabbit.unknown_key is not applied" in warning for warning in loaded.warnings)
    assert loaded.files[-1].endswith("advanced.config")
    shown = render(loaded)
    assert "RABBITMQ_SERVER_START_ARGS:0 listeners.tcp.1" in shown
    assert "default (AMQP port + 20000)" in shown


def test_node_ip_address_takes_ipv6_and_default_is_dual_stack(tmp_path: Path) -> None:
    _, default = _load(tmp_path, {})
    _, ipv6 = _load(tmp_path, {"RABBITMQ_NODE_IP_ADDRESS": "::1"})
    _, listener = _load(tmp_path, {}, "listeners.tcp.1 = ::1:5672\n")
    assert (default.host, ipv6.host, listener.host) == ("::", "::1", "::1")


def test_erlang_terms() -> None:
    assert parse_term('[{rabbit, [{default_user, <<"bob">>}, {x, -1.5}, {\'q a\', "s"}]}].') == [
        ("rabbit", [("default_user", "bob"), ("x", -1.5), ("q a", "s")])
    ]
    assert parse_app_args("-rabbit heartbeat 5 -kernel inet_dist_use_interface {127,0,0,1}") == [
        ("rabbit", "heartbeat", 5),
        ("kernel", "inet_dist_use_interface", (127, 0, 0, 1)),
    ]
    with pytest.raises(TermError):
        parse_term("[{rabbit, #{}}].")
