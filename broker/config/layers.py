"""Where each setting comes from: command line > environment (WARRENMQ_*, then RABBITMQ_*) > configuration
files > defaults. Every resolved value keeps its source, which `warrenmq config show` prints.

The files are found as RabbitMQ finds them: RABBITMQ_CONFIG_FILE (default /etc/rabbitmq/rabbitmq.conf; a
path without extension gets ".conf"), then the *.conf files of RABBITMQ_CONFIG_FILES (default
/etc/rabbitmq/conf.d) in alphabetical order, later settings winning; RABBITMQ_ENABLED_PLUGINS_FILE (default
/etc/rabbitmq/enabled_plugins). WARRENMQ_SYS_PREFIX prefixes the default paths (RabbitMQ's SYS_PREFIX),
which lets tests run the image's entrypoint in a temporary root.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from broker.config.model import Watermark
from broker.config.plugins import parse_enabled_plugins
from broker.config.rabbitmq_conf import FileSettings, apply_entry
from broker.config.rabbitmq_env import MergedEnviron, merged_environ
from broker.config.sysctl import ConfigFileError, parse_sysctl
from broker.core.model.profile import DEFAULT_PROFILE
from broker.session.config import (
    DEFAULT_CHANNEL_MAX,
    DEFAULT_CONSUMER_TIMEOUT_MS,
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT_S,
    DEFAULT_SESSION_MAX_PER_CONNECTION,
)


class ConfigError(Exception):
    """A setting that cannot be used (bad environment value, unreadable file); the text says which."""


def _users(text: str) -> dict[str, str]:
    users: dict[str, str] = {}
    for item in text.split(","):
        name, sep, password = item.partition(":")
        if item and (not sep or not name):
            raise ValueError(f"expected USER:PASSWORD, got {item!r}")
        if item:
            users[name] = password
    return users


def _list(text: str) -> tuple[str, ...]:
    return tuple(item for item in text.split(",") if item)


# NamedTuples, not dataclasses: start-up cost.
class Setting(NamedTuple):
    name: str
    default: Any
    env: tuple[str, ...] = ()
    parse: Callable[[str], Any] = str


SETTINGS: tuple[Setting, ...] = (
    # "::": one dual-stack socket, IPv4 clients included (broker/server/sockets.py), as RabbitMQ listens.
    Setting("host", "::", ("WARRENMQ_HOST", "RABBITMQ_NODE_IP_ADDRESS")),
    Setting("port", 5672, ("WARRENMQ_PORT", "RABBITMQ_NODE_PORT"), int),
    Setting("management_port", 15672, ("WARRENMQ_MANAGEMENT_PORT",), int),
    Setting("prometheus_port", 15692, ("WARRENMQ_PROMETHEUS_PORT",), int),
    # rabbitmq.conf collect_statistics_interval: milliseconds between statistics samples (RabbitMQ's 5000).
    Setting("collect_statistics_interval", 5000, (), int),
    # rabbitmq.conf event_exchange.vhost: where rabbitmq_event_exchange declares amq.rabbitmq.event.
    Setting("event_exchange_vhost", "/", ()),
    # users / vhosts: WarrenMQ's lists; when not given, the one default user / vhost (RabbitMQ's).
    Setting("users", None, ("WARRENMQ_USERS",), _users),
    Setting("default_user", "guest", ("RABBITMQ_DEFAULT_USER",)),
    Setting("default_pass", "guest", ("RABBITMQ_DEFAULT_PASS",)),
    Setting("vhosts", None, ("WARRENMQ_VHOSTS",), _list),
    Setting("default_vhost", "/", ("RABBITMQ_DEFAULT_VHOST",)),
    Setting("default_user_tags", ("administrator",)),
    Setting("default_permissions", (".*", ".*", ".*")),
    # RabbitMQ's default: guest logs in from loopback only (the image's 10-defaults.conf sets
    # loopback_users.guest = false, as RabbitMQ's image does).
    Setting("loopback_users", ("guest",)),
    Setting("definitions", None, ("WARRENMQ_DEFINITIONS",)),
    Setting("log_format", "console", ("WARRENMQ_LOG_FORMAT",)),
    Setting("log_level", "info", ("WARRENMQ_LOG_LEVEL",)),
    Setting("frame_max", DEFAULT_FRAME_MAX, ("WARRENMQ_FRAME_MAX",), int),
    Setting("channel_max", DEFAULT_CHANNEL_MAX, ("WARRENMQ_CHANNEL_MAX",), int),
    Setting("session_max_per_connection", DEFAULT_SESSION_MAX_PER_CONNECTION),
    Setting("heartbeat", DEFAULT_HEARTBEAT_S, ("WARRENMQ_HEARTBEAT",), int),
    Setting("max_message_size", None, ("WARRENMQ_MAX_MESSAGE_SIZE",), int),
    Setting("consumer_timeout", DEFAULT_CONSUMER_TIMEOUT_MS, ("WARRENMQ_CONSUMER_TIMEOUT",), int),
    # None: infinity, RabbitMQ's default for both.
    Setting("connection_max", None),
    Setting("consumer_max_per_channel", None),
    # TLS: listeners.ssl.default, ssl_options.*, management.ssl.*, and the EXTERNAL mechanism's settings.
    Setting("ssl_port", None),
    Setting("ssl_options", None),
    Setting("ssl_handshake_timeout", 5000),
    Setting("ssl_cert_login_from", "distinguished_name"),
    Setting("management_ssl_port", None),
    Setting("management_ssl", None),
    Setting("auth_mechanisms", ("PLAIN", "AMQPLAIN")),
    Setting("profile", DEFAULT_PROFILE.name, ("WARRENMQ_PROFILE",)),
    Setting("report_as", "rabbitmq", ("WARRENMQ_REPORT_AS",)),
    # RabbitMQ's node directories: the data directory is $RABBITMQ_MNESIA_BASE/$RABBITMQ_NODENAME unless
    # RABBITMQ_MNESIA_DIR names it (defaults filled in by resolve: they depend on the node name).
    Setting("mnesia_base", None, ("RABBITMQ_MNESIA_BASE",)),
    Setting("data_dir", None, ("WARRENMQ_DATA_DIR", "RABBITMQ_MNESIA_DIR")),
    # The durable store: None = SQLite under the data directory; postgresql://...: the PostgreSQL store.
    Setting("store", None, ("WARRENMQ_STORE",)),
    Setting("pid_file", None, ("RABBITMQ_PID_FILE",)),
    Setting("log_base", None, ("RABBITMQ_LOG_BASE",)),
    Setting("logs", None, ("RABBITMQ_LOGS",)),
    # rabbitmq.conf log.console = true: the console as well as the file (broker/log_setup.py).
    Setting("log_console", None),
    Setting("log_file_format", None),
    # The CLI channel (broker/management/control.py): RabbitMQ's distribution port, AMQP port + 20000.
    Setting("dist_port", None, ("RABBITMQ_DIST_PORT",), int),
    Setting("fsync", "always", ("WARRENMQ_FSYNC",)),
    # High availability on a PostgreSQL store (broker/ha): the active node's lease, in seconds.
    Setting("ha_lease_s", 3.0, ("WARRENMQ_HA_LEASE_S",), float),
    Setting("node_name", None, ("RABBITMQ_NODENAME",)),
    Setting("cluster_name", None),
    # RabbitMQ 3.x's defaults (4.0 raised the memory watermark to 0.6); 50MB = 50,000,000 bytes.
    Setting("vm_memory_high_watermark", Watermark("relative", 0.4)),
    Setting("vm_memory_high_watermark_paging_ratio", 0.5),
    Setting("disk_free_limit", Watermark("absolute", 50_000_000)),
    # "off" only to measure the planes' cost (warrenmq bench --plane-cost): see broker.config.model.
    Setting("planes", "on", ("WARRENMQ_PLANES",)),
)
BY_NAME = {setting.name: setting for setting in SETTINGS}


class Resolved(NamedTuple):
    value: Any
    source: (
        str  # "default", "--port", "env WARRENMQ_PORT", "/etc/rabbitmq/rabbitmq.conf:3 listeners.tcp.default"
    )


def env_value(name: str, environ: Mapping[str, str]) -> str | None:
    """An environment variable or its ``_FILE`` form (the file's content, as the image's file_env does)."""
    value = environ.get(name)
    file_name = environ.get(f"{name}_FILE")
    if value and file_name:
        raise ConfigError(f"both {name} and {name}_FILE are set (but are exclusive)")
    if file_name:
        try:
            return Path(file_name).read_text().rstrip("\r\n")
        except OSError as error:
            raise ConfigError(f"{name}_FILE: cannot read {file_name}: {error.strerror}") from None
    return value or None


def _prefix(environ: Mapping[str, str]) -> str:
    return environ.get("WARRENMQ_SYS_PREFIX", "").rstrip("/")


def config_file_paths(cli_path: str | None, environ: Mapping[str, str]) -> list[str]:
    """The configuration files to read, main file first. The default main file may be absent, and so may
    RABBITMQ_CONFIG_FILE's (RabbitMQ boots without it); one named by --config-file or WARRENMQ_CONFIG_FILE
    must exist."""
    own = cli_path or environ.get("WARRENMQ_CONFIG_FILE")
    main = own or environ.get("RABBITMQ_CONFIG_FILE") or f"{_prefix(environ)}/etc/rabbitmq/rabbitmq.conf"
    paths: list[str] = []
    if main.lower() != "none":
        suffix = Path(main).suffix
        if suffix == ".config":
            raise ConfigError(
                f"{main}: the classic Erlang-term config format is not supported; use rabbitmq.conf"
            )
        if not suffix:
            main += ".conf"
        if Path(main).is_file():
            paths.append(main)
        elif own:
            raise ConfigError(f"{main}: configuration file not found")
    conf_d = environ.get("RABBITMQ_CONFIG_FILES") or f"{_prefix(environ)}/etc/rabbitmq/conf.d"
    if Path(conf_d).is_dir():
        paths.extend(str(p) for p in sorted(Path(conf_d).glob("*.conf")))
    return paths


def enabled_plugins_path(cli_path: str | None, environ: Mapping[str, str]) -> tuple[str, bool]:
    """The enabled_plugins path, and whether it was named (not the default)."""
    named = (
        cli_path
        or environ.get("WARRENMQ_ENABLED_PLUGINS_FILE")
        or environ.get("RABBITMQ_ENABLED_PLUGINS_FILE")
    )
    return named or f"{_prefix(environ)}/etc/rabbitmq/enabled_plugins", bool(named)


def read_file_settings(paths: list[str]) -> FileSettings:
    settings = FileSettings()
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as error:
            raise ConfigFileError(path, 0, f"cannot read: {error.strerror}") from None
        except UnicodeDecodeError as error:
            raise ConfigFileError(path, 0, f"not UTF-8 text: {error.reason}") from None
        for entry in parse_sysctl(text, path):
            apply_entry(entry, settings)
    return settings


def read_enabled_plugins(path: str, named: bool) -> tuple[str, ...] | None:
    """The file's plugins; a named file that is missing enables none (as RabbitMQ), a missing default file
    leaves every plugin WarrenMQ has on (None)."""
    if not Path(path).is_file():
        return () if named else None
    try:
        return parse_enabled_plugins(Path(path).read_text(), path)
    except OSError as error:
        raise ConfigFileError(path, 0, f"cannot read: {error.strerror}") from None


def resolve(
    cli: Mapping[str, Any],
    files: FileSettings,
    environ: Mapping[str, str],
    *,
    rabbitmq_layout: bool = False,
) -> dict[str, Resolved]:
    """Each setting's value and source; ``cli`` holds the flags given (None = not given).

    ``rabbitmq_layout`` (the ``rabbitmq-server`` stand-in) puts the data directory where RabbitMQ puts its
    Mnesia directory even when no RabbitMQ variable says so; ``warrenmq serve`` then uses ./warrenmq-data."""
    resolved: dict[str, Resolved] = {}
    for setting in SETTINGS:
        flag = cli.get(setting.name)
        if flag is not None:
            resolved[setting.name] = Resolved(flag, "--" + setting.name.replace("_", "-"))
            continue
        found = _from_env(setting, environ)
        if found is None and setting.name in files.values:
            value, where = files.values[setting.name]
            found = Resolved(value, where)
        resolved[setting.name] = found or Resolved(setting.default, "default")
    node = resolved["node_name"]
    if node.value is None:
        resolved["node_name"] = Resolved(f"rabbit@{short_hostname()}", "default")
    elif "@" not in node.value:  # RABBITMQ_NODENAME=hare is hare@<short host name>, as in RabbitMQ
        resolved["node_name"] = Resolved(f"{node.value}@{short_hostname()}", node.source)
    _node_paths(resolved, environ, rabbitmq_layout)
    if resolved["cluster_name"].value is None:
        # RabbitMQ's default cluster name is the node name.
        resolved["cluster_name"] = Resolved(resolved["node_name"].value, resolved["node_name"].source)
    return resolved


# `warrenmq serve`'s data directory when no RabbitMQ variable places it (see _node_paths).
WARRENMQ_DATA_DIR = "warrenmq-data"


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def _derived(resolved: dict[str, Resolved], name: str, value: Any, how: str) -> None:
    if resolved[name].source == "default":
        resolved[name] = Resolved(value, f"default ({how})")


def _node_paths(resolved: dict[str, Resolved], environ: Mapping[str, str], rabbitmq_layout: bool) -> None:
    """RabbitMQ's defaults for where a node's files go and its distribution port (rabbitmq-env(5), the
    configure guide): MNESIA_DIR = $MNESIA_BASE/$NODENAME, PID_FILE = $MNESIA_DIR.pid, LOGS =
    $LOG_BASE/$NODENAME.log, DIST_PORT = NODE_PORT + 20000. Logs go to the console unless RABBITMQ_LOGS or
    RABBITMQ_LOG_BASE is set (WarrenMQ's default, the container image's).

    Without RABBITMQ_MNESIA_BASE, `warrenmq serve` keeps ./warrenmq-data (what `make run` promises, writable
    by any user, and never RabbitMQ's own /var/lib/rabbitmq/mnesia of a RabbitMQ installed beside it); the
    `rabbitmq-server` stand-in takes RabbitMQ's default, as a fixture starting that executable expects."""
    prefix = _prefix(environ)
    node = resolved["node_name"].value
    base_given = resolved["mnesia_base"].source != "default"
    _derived(resolved, "mnesia_base", f"{prefix}/var/lib/rabbitmq/mnesia", "RabbitMQ's")
    base = resolved["mnesia_base"].value
    if base_given or rabbitmq_layout:
        _derived(resolved, "data_dir", f"{base}/{node}", "$RABBITMQ_MNESIA_BASE/$NODENAME")
    else:
        _derived(resolved, "data_dir", WARRENMQ_DATA_DIR, "WarrenMQ's, in the working directory")
    data = resolved["data_dir"]
    per_node = "$RABBITMQ_MNESIA_BASE" in data.source or "RABBITMQ_MNESIA_DIR" in data.source
    if per_node and str(data.value).strip().lower() not in ("none", ""):
        _derived(resolved, "pid_file", f"{data.value}.pid", "$RABBITMQ_MNESIA_DIR.pid")
    logged_to_file = resolved["log_base"].source != "default"
    _derived(resolved, "log_base", f"{prefix}/var/log/rabbitmq", "RabbitMQ's")
    if logged_to_file:
        log_file = f"{resolved['log_base'].value}/{node}.log"
        _derived(resolved, "logs", log_file, "$RABBITMQ_LOG_BASE/$NODENAME.log")
    else:
        _derived(resolved, "logs", "-", "console")
    port = resolved["port"].value
    # Port 0 (ephemeral AMQP) gets an ephemeral distribution port too; so does one past 65535.
    dist = port + 20000 if 0 < port + 20000 <= 65535 and port > 0 else 0
    _derived(resolved, "dist_port", dist, "AMQP port + 20000")


def _from_env(setting: Setting, environ: Mapping[str, str]) -> Resolved | None:
    for name in setting.env:
        text = env_value(name, environ)
        if text is None:
            continue
        source = environ.origin(name) if isinstance(environ, MergedEnviron) else f"env {name}"
        try:
            return Resolved(setting.parse(text), source)
        except ValueError as error:
            raise ConfigError(f"{name}={text!r}: {error}") from None
    return None


def environ() -> Mapping[str, str]:
    """The process environment with rabbitmq-env.conf under it (broker/config/rabbitmq_env.py)."""
    try:
        return merged_environ(os.environ)
    except ConfigFileError as error:
        raise SystemExit(f"warrenmq: {error}") from None
