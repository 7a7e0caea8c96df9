"""rabbitmq.conf (sysctl format) and enabled_plugins parsing: RabbitMQ's syntax, sizes, and errors that
name the file and the line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.config.model import Watermark
from broker.config.plugins import (
    parse_enabled_plugins,
    started_plugins,
    startup_complete_lines,
    unimplemented,
)
from broker.config.rabbitmq_conf import FileSettings, apply_entry
from broker.config.sysctl import ConfigFileError, parse_size, parse_sysctl


def _settings(text: str) -> FileSettings:
    settings = FileSettings()
    for entry in parse_sysctl(text, "r.conf"):
        apply_entry(entry, settings)
    return settings


def test_comments_blank_lines_and_trailing_comments_are_skipped() -> None:
    entries = parse_sysctl("# a comment\n\n  default_user = admin  # who\nheartbeat=30\n", "r.conf")
    assert [(e.key, e.value, e.line) for e in entries] == [
        ("default_user", "admin", 3),
        ("heartbeat", "30", 4),
    ]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("heartbeat = 30\nthis is not a setting\n", 2, "expected 'key = value'"),
        ("\n\nheartbeat =\n", 3, "no value"),
        ("bad key = 1\n", 1, "invalid key"),
    ],
)
def test_a_malformed_line_is_reported_with_file_and_line(text: str, line: int, reason: str) -> None:
    with pytest.raises(ConfigFileError) as caught:
        parse_sysctl(text, "/etc/rabbitmq/rabbitmq.conf")
    assert (caught.value.path, caught.value.line) == ("/etc/rabbitmq/rabbitmq.conf", line)
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"/etc/rabbitmq/rabbitmq.conf, line {line}: ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1073741824", 1073741824),
        ("2GB", 2_000_000_000),
        ("2GiB", 2 * 1024**3),
        ("512MiB", 512 * 1024**2),
        ("50MB", 50_000_000),
        ("1k", 1024),
        ("1kB", 1000),
        ("lots", None),
        ("12XB", None),
    ],
)
def test_sizes_take_rabbitmqs_units(text: str, expected: int | None) -> None:
    assert parse_size(text) == expected


@given(st.integers(min_value=0, max_value=2**40), st.sampled_from(["", "MB", "MiB", "GB", "GiB"]))
def test_sizes_scale_by_their_unit(number: int, unit: str) -> None:
    factor = {"": 1, "MB": 10**6, "MiB": 2**20, "GB": 10**9, "GiB": 2**30}[unit]
    assert parse_size(f"{number}{unit}") == number * factor


def test_the_keys_warrenmq_has_become_settings_with_their_source() -> None:
    settings = _settings(
        "listeners.tcp.default = 127.0.0.1:5673\n"
        "default_user = admin\ndefault_pass = s3cret\ndefault_vhost = prod\n"
        "default_user_tags.monitoring = true\ndefault_user_tags.administrator = false\n"
        "default_permissions.write = ^$\nloopback_users.guest = false\n"
        "management.tcp.port = 15673\nprometheus.tcp.port = 15693\n"
        "management.load_definitions = /defs.json\n"
        "vm_memory_high_watermark.relative = 0.4\ndisk_free_limit.absolute = 1GB\n"
        "heartbeat = 30\nframe_max = 8192\nchannel_max = 64\nmax_message_size = 1000000\n"
        "consumer_timeout = 900000\nlog.console.level = warning\ncluster_name = c1\n"
    )
    values = {name: value for name, (value, _) in settings.values.items()}
    assert values == {
        "port": 5673,
        "host": "127.0.0.1",
        "default_user": "admin",
        "default_pass": "s3cret",
        "default_vhost": "prod",
        "default_user_tags": ("monitoring",),
        "default_permissions": (".*", ".*", "^$"),
        "loopback_users": (),
        "management_port": 15673,
        "prometheus_port": 15693,
        "definitions": "/defs.json",
        "vm_memory_high_watermark": Watermark("relative", 0.4),
        "disk_free_limit": Watermark("absolute", 1_000_000_000),
        "heartbeat": 30,
        "frame_max": 8192,
        "channel_max": 64,
        "max_message_size": 1000000,
        "consumer_timeout": 900000,
        "log_level": "warning",
        "cluster_name": "c1",
    }
    assert settings.values["port"][1] == "r.conf:1 listeners.tcp.default"
    assert settings.warnings == []


def test_load_definitions_wins_over_the_management_key_and_ipv6_listeners_parse() -> None:
    settings = _settings(
        "load_definitions = /core.json\nmanagement.load_definitions = /mgmt.json\n"
        "listeners.tcp.local = ::1:5674\n"
    )
    assert settings.values["definitions"][0] == "/core.json"
    assert (settings.values["host"][0], settings.values["port"][0]) == ("::1", 5674)


def test_unknown_keys_warn_once_each_and_never_stop() -> None:
    settings = _settings("cluster_formation.peer_discovery_backend = classic_config\nheartbeat = 5\n")
    assert settings.values["heartbeat"][0] == 5
    assert settings.warnings == [
        "r.conf:1: unknown setting 'cluster_formation.peer_discovery_backend' ignored"
    ]


def test_rabbitmq_keys_with_nothing_to_configure_are_accepted_silently() -> None:
    assert (
        _settings("log.file = false\nlog.connection.level = debug\nhandshake_timeout = 10000\n").warnings
        == []
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("heartbeat = soon\n", "heartbeat: expected an integer, got 'soon'"),
        ("vm_memory_high_watermark.absolute = a lot\n", "expected bytes"),
        ("loopback_users.guest = maybe\n", "expected true or false"),
        ("log.console.level = loud\n", "expected one of debug"),
        ("listeners.tcp.default = localhost\n", "expected PORT or IP:PORT"),
    ],
)
def test_a_bad_value_for_a_known_key_stops_with_file_and_line(text: str, reason: str) -> None:
    with pytest.raises(ConfigFileError) as caught:
        _settings("# first\n" + text)
    assert caught.value.line == 2
    assert reason in caught.value.reason


def test_enabled_plugins_is_an_erlang_list_of_atoms() -> None:
    text = (
        "%% managed by rabbitmq-plugins\n[rabbitmq_management,\n 'rabbitmq_prometheus', rabbitmq_shovel].\n"
    )
    assert parse_enabled_plugins(text, "p") == (
        "rabbitmq_management",
        "rabbitmq_prometheus",
        "rabbitmq_shovel",
    )
    assert parse_enabled_plugins("[].", "p") == ()


@pytest.mark.parametrize(
    ("text", "line"),
    [("[rabbitmq_management]\n", 1), ("\n[rabbitmq_management,\n 42].\n", 3), ("rabbitmq_management.\n", 1)],
)
def test_a_malformed_enabled_plugins_file_names_file_and_line(text: str, line: int) -> None:
    with pytest.raises(ConfigFileError) as caught:
        parse_enabled_plugins(text, "/etc/rabbitmq/enabled_plugins")
    assert (caught.value.path, caught.value.line) == ("/etc/rabbitmq/enabled_plugins", line)


def test_started_plugins_count_dependencies_as_rabbitmq_does() -> None:
    assert started_plugins(("rabbitmq_management", "rabbitmq_shovel")) == [
        "rabbitmq_management",
        "rabbitmq_management_agent",
        "rabbitmq_web_dispatch",
    ]
    assert unimplemented(("rabbitmq_management", "rabbitmq_shovel", "rabbitmq_prometheus")) == [
        "rabbitmq_shovel"
    ]
    assert started_plugins(()) == []
    # No file: everything WarrenMQ has.
    assert "rabbitmq_consistent_hash_exchange" in started_plugins(None)


def test_startup_complete_line_has_rabbitmqs_text() -> None:
    lines = startup_complete_lines(["rabbitmq_management", "rabbitmq_web_dispatch"])
    assert lines[0].endswith(" [info] <0.9.0> Server startup complete; 2 plugins started.")
    assert lines[1].endswith("  * rabbitmq_management")
    assert len(lines) == 3


def test_key_families_replace_rabbitmqs_default_lists() -> None:
    settings = _settings(
        "loopback_users.guest = true\nloopback_users.ops = true\nloopback_users.guest = false\n"
        "default_permissions.configure = ^app\\.\ndefault_permissions.admin = .*\n"
    )
    assert settings.values["loopback_users"][0] == ("ops",)
    assert settings.values["default_permissions"][0] == ("^app\\.", ".*", ".*")
    assert settings.warnings == ["r.conf:5: unknown setting 'default_permissions.admin' ignored"]
    assert _settings("loopback_users.ops = true\nloopback_users = none\n").values["loopback_users"][0] == ()
