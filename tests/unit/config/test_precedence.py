"""Where settings come from: command line > environment (WARRENMQ_*, then RABBITMQ_*) > rabbitmq.conf >
defaults, with the `_FILE` forms of the image's variables; `warrenmq config show` reports each source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker.cli import build_parser, main
from broker.config.args import Loaded, config_from_loaded
from broker.config.model import ServerConfig


def _load(
    tmp_path: Path, argv: list[str], env: dict[str, str], conf: str = ""
) -> tuple[Loaded, ServerConfig]:
    root = tmp_path / "root"
    (root / "etc/rabbitmq").mkdir(parents=True, exist_ok=True)
    if conf:
        (root / "etc/rabbitmq/rabbitmq.conf").write_text(conf)
    args = build_parser().parse_args(["serve", *argv])
    loaded = Loaded(args, {"WARRENMQ_SYS_PREFIX": str(root), **env})
    return loaded, config_from_loaded(loaded, args)


def test_flag_beats_environment_beats_file_beats_default(tmp_path: Path) -> None:
    conf = "heartbeat = 11\nframe_max = 8192\nchannel_max = 99\nlisteners.tcp.default = 5601\n"
    loaded, config = _load(
        tmp_path,
        ["--heartbeat", "33"],
        {"WARRENMQ_HEARTBEAT": "22", "WARRENMQ_FRAME_MAX": "16384", "RABBITMQ_NODE_PORT": "5602"},
        conf,
    )
    session = config.session
    assert (session.heartbeat_s, session.frame_max, session.channel_max, config.port) == (33, 16384, 99, 5602)
    assert config.session.consumer_timeout_ms == 1_800_000
    sources = {name: r.source for name, r in loaded.resolved.items()}
    assert sources["heartbeat"] == "--heartbeat"
    assert sources["frame_max"] == "env WARRENMQ_FRAME_MAX"
    assert sources["channel_max"].endswith("etc/rabbitmq/rabbitmq.conf:3 channel_max")
    assert sources["port"] == "env RABBITMQ_NODE_PORT"
    assert sources["consumer_timeout"] == "default"


def test_warrenmq_variables_beat_rabbitmq_variables(tmp_path: Path) -> None:
    _, config = _load(tmp_path, [], {"WARRENMQ_PORT": "5603", "RABBITMQ_NODE_PORT": "5604"})
    assert config.port == 5603


def test_the_images_default_user_and_vhost_variables_and_their_file_forms(tmp_path: Path) -> None:
    secret = tmp_path / "pass.txt"
    secret.write_text("from-a-secret\n")
    env = {
        "RABBITMQ_DEFAULT_USER": "app",
        "RABBITMQ_DEFAULT_PASS_FILE": str(secret),
        "RABBITMQ_DEFAULT_VHOST": "v",
    }
    _, config = _load(tmp_path, [], env, "default_user = ignored\ndefault_vhost = ignored\n")
    assert (dict(config.users), config.vhosts) == ({"app": "from-a-secret"}, ("v",))


def test_default_user_from_the_file_and_explicit_users_replace_it(tmp_path: Path) -> None:
    conf = "default_user = admin\ndefault_pass = pw\ndefault_vhost = prod\n"
    _, config = _load(tmp_path, [], {}, conf)
    assert (dict(config.users), config.vhosts) == ({"admin": "pw"}, ("prod",))
    _, config = _load(tmp_path, ["--user", "u:p"], {"WARRENMQ_VHOSTS": "a,b"}, conf)
    assert (dict(config.users), config.vhosts) == ({"u": "p"}, ("a", "b"))


def test_a_variable_and_its_file_form_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="both RABBITMQ_DEFAULT_PASS and RABBITMQ_DEFAULT_PASS_FILE"):
        _load(tmp_path, [], {"RABBITMQ_DEFAULT_PASS": "a", "RABBITMQ_DEFAULT_PASS_FILE": "/x"})


def test_rabbitmq_config_file_without_extension_gets_conf_and_conf_d_follows(tmp_path: Path) -> None:
    (tmp_path / "main.conf").write_text("heartbeat = 1\nchannel_max = 7\n")
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d/20-b.conf").write_text("heartbeat = 3\n")
    (tmp_path / "conf.d/10-a.conf").write_text("heartbeat = 2\n")
    env = {"RABBITMQ_CONFIG_FILE": str(tmp_path / "main"), "RABBITMQ_CONFIG_FILES": str(tmp_path / "conf.d")}
    loaded, config = _load(tmp_path, [], env)
    assert (config.session.heartbeat_s, config.session.channel_max) == (3, 7)
    assert [Path(p).name for p in loaded.files] == ["main.conf", "10-a.conf", "20-b.conf"]


def test_a_malformed_file_stops_with_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"rabbitmq\.conf, line 2: syntax error"):
        _load(tmp_path, [], {}, "heartbeat = 1\nnonsense\n")


def test_an_out_of_range_value_from_the_file_names_its_source(tmp_path: Path) -> None:
    with pytest.raises(
        SystemExit, match=r"--frame-max must be at least 4096 \(.*rabbitmq\.conf:1 frame_max\)"
    ):
        _load(tmp_path, [], {}, "frame_max = 100\n")


def test_enabled_plugins_switch_management_and_warn_about_the_rest(tmp_path: Path) -> None:
    plugins = tmp_path / "enabled_plugins"
    plugins.write_text("[rabbitmq_shovel,rabbitmq_federation].\n")
    loaded, config = _load(tmp_path, [], {"RABBITMQ_ENABLED_PLUGINS_FILE": str(plugins)})
    assert config.management_port is None
    assert config.prometheus_port is None
    assert config.enabled_plugins == ("rabbitmq_shovel", "rabbitmq_federation")
    assert loaded.warnings == [
        f"{plugins}: plugins not implemented by WarrenMQ, ignored: rabbitmq_shovel, rabbitmq_federation"
    ]
    plugins.write_text("[rabbitmq_management,rabbitmq_prometheus].\n")
    loaded, config = _load(tmp_path, [], {"RABBITMQ_ENABLED_PLUGINS_FILE": str(plugins)})
    assert (config.management_port, config.prometheus_port, loaded.warnings) == (15672, 15692, [])


@pytest.mark.parametrize(
    ("argv", "product", "version"),
    [
        ([], "RabbitMQ", "3.13.7"),
        (["--profile", "rabbitmq-4.0"], "RabbitMQ", "4.0.9"),
        (["--profile", "rabbitmq-4.3"], "RabbitMQ", "4.3.0"),
        (["--report-as", "warrenmq"], "WarrenMQ", "0.1.0"),
    ],
)
def test_server_identity_follows_the_profile(
    tmp_path: Path, argv: list[str], product: str, version: str
) -> None:
    _, config = _load(tmp_path, argv, {})
    assert (config.session.product, config.session.product_version) == (product, version)


def test_cluster_name_defaults_to_the_node_name(tmp_path: Path) -> None:
    _, config = _load(tmp_path, [], {"RABBITMQ_NODENAME": "rabbit@box"})
    assert (config.node_name, config.session.cluster_name) == ("rabbit@box", "rabbit@box")
    _, config = _load(tmp_path, [], {}, "cluster_name = ci\n")
    assert config.session.cluster_name == "ci"


def test_config_show_prints_values_and_sources_without_passwords(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "r.conf"
    conf.write_text("default_user = admin\ndefault_pass = s3cret\nmystery.key = 1\n")
    monkeypatch.setenv("WARRENMQ_HEARTBEAT", "5")
    assert main(["config", "show", "--config-file", str(conf), "--port", "5999", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    settings = shown["settings"]
    assert settings["port"] == {"value": 5999, "source": "--port"}
    assert settings["heartbeat"] == {"value": 5, "source": "env WARRENMQ_HEARTBEAT"}
    assert settings["default_user"] == {"value": "admin", "source": f"{conf}:1 default_user"}
    assert settings["default_pass"]["value"] == "********"
    assert shown["config_files"] == [str(conf)]
    assert shown["warnings"] == [f"{conf}:3: unknown setting 'mystery.key' ignored"]
    assert main(["config", "show", "--config-file", str(conf)]) == 0
    table = capsys.readouterr().out
    assert "s3cret" not in table
    assert any(line.split()[:3] == ["port", "5672", "default"] for line in table.splitlines())


def test_a_named_enabled_plugins_file_that_is_missing_enables_none(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_enabled_plugins"
    loaded, config = _load(tmp_path, [], {"RABBITMQ_ENABLED_PLUGINS_FILE": str(missing)})
    assert (config.enabled_plugins, config.management_port) == ((), None)
    assert loaded.warnings == [f"{missing}: enabled_plugins file not found; no plugins enabled"]
    # The default path missing: every plugin WarrenMQ has.
    _, config = _load(tmp_path, [], {})
    assert (config.enabled_plugins, config.management_port) == (None, 15672)


def test_config_file_lookup_errors(tmp_path: Path) -> None:
    # RabbitMQ boots without the file RABBITMQ_CONFIG_FILE names; WarrenMQ's own flag must name a real file.
    _, config = _load(tmp_path, [], {"RABBITMQ_CONFIG_FILE": str(tmp_path / "absent.conf")})
    assert config.port == 5672
    with pytest.raises(SystemExit, match=r"absent\.conf: configuration file not found"):
        _load(tmp_path, ["--config-file", str(tmp_path / "absent.conf")], {})
    with pytest.raises(SystemExit, match="classic Erlang-term config format is not supported"):
        _load(tmp_path, [], {"RABBITMQ_CONFIG_FILE": str(tmp_path / "rabbitmq.config")})
    _, config = _load(tmp_path, ["--config-file", "none"], {}, "heartbeat = 9\n")
    assert config.session.heartbeat_s == 60


def test_collect_statistics_interval_comes_from_rabbitmq_conf_in_milliseconds(tmp_path: Path) -> None:
    _, default = _load(tmp_path, [], {})
    assert default.collect_statistics_interval_ms == 5000  # RabbitMQ's default
    loaded, config = _load(tmp_path, [], {}, "collect_statistics_interval = 10000\n")
    assert config.collect_statistics_interval_ms == 10_000
    assert loaded.resolved["collect_statistics_interval"].source.endswith(
        "rabbitmq.conf:1 collect_statistics_interval"
    )


def test_planes_are_on_by_default_and_off_drops_the_http_listeners(tmp_path: Path) -> None:
    _, default = _load(tmp_path, [], {})
    assert default.planes is True
    assert (default.management_port, default.prometheus_port) == (15672, 15692)
    _, off = _load(tmp_path, ["--management-port", "0"], {"WARRENMQ_PLANES": "off"})
    assert off.planes is False
    assert (off.management_port, off.prometheus_port) == (None, None)


def test_planes_accept_only_on_or_off(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        _load(tmp_path, [], {"WARRENMQ_PLANES": "maybe"})


def test_session_max_per_connection_from_rabbitmq_conf_and_its_range(tmp_path: Path) -> None:
    """RabbitMQ 4's AMQP 1.0 session limit: 64 by default, rabbitmq.conf's value within 1..65535."""
    _, default = _load(tmp_path, [], {})
    _, configured = _load(tmp_path, [], {}, "session_max_per_connection = 8\n")
    assert (default.session.session_max_per_connection, configured.session.session_max_per_connection) == (
        64,
        8,
    )
    with pytest.raises(SystemExit, match=r"session-max-per-connection must be within 1\.\.65535"):
        _load(tmp_path, [], {}, "session_max_per_connection = 0\n")
