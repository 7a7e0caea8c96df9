"""`warrenmq serve` flags and the ServerConfig they resolve to, with the environment and rabbitmq.conf
underneath (broker/config/layers.py). Flags default to None so that a flag given is told from one not."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from broker import __version__
from broker.config import layers
from broker.config.app_env import START_ARGS, apply_advanced_config, apply_start_args
from broker.config.model import JournalConfig, ServerConfig, TLSOptions
from broker.config.plugins import AUTH_MECHANISM_SSL, MANAGEMENT, PROMETHEUS, unimplemented
from broker.config.rabbitmq_conf import FileSettings
from broker.config.sysctl import ConfigFileError
from broker.core.model.profile import PROFILES
from broker.session.config import SessionConfig

FRAME_MIN_SIZE = 4096
MAX_CHANNEL_MAX = 65535
MAX_MESSAGE_SIZE_LIMIT = 536_870_912  # RabbitMQ refuses max_message_size above 512 MiB
CHOICES = {
    "log_format": ("console", "json"),
    "log_level": ("debug", "info", "warning", "error"),
    "fsync": ("always", "batch", "never"),
    "report_as": ("rabbitmq", "warrenmq"),
    "planes": ("on", "off"),
}


def parse_user(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected USER:PASSWORD, got {text!r}")
    return name, password


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--host",
        help="listen address, IPv4 or IPv6 (WARRENMQ_HOST, RABBITMQ_NODE_IP_ADDRESS; default ::, dual-stack: "
        "IPv4 clients too, 0.0.0.0 on a machine without IPv6)",
    )
    add("--port", type=int, help="AMQP port, 0 = ephemeral (WARRENMQ_PORT, RABBITMQ_NODE_PORT; default 5672)")
    add(
        "--user",
        dest="users",
        action="append",
        type=parse_user,
        help="USER:PASSWORD, repeatable "
        "(WARRENMQ_USERS=u1:p1,u2:p2; default: RABBITMQ_DEFAULT_USER/PASS or default_user/pass, guest:guest)",
    )
    add(
        "--vhost",
        dest="vhosts",
        action="append",
        help="virtual host, repeatable "
        "(WARRENMQ_VHOSTS; default: RABBITMQ_DEFAULT_VHOST or default_vhost, /)",
    )
    add("--log-format", choices=CHOICES["log_format"], help="WARRENMQ_LOG_FORMAT (default console)")
    add("--log-level", choices=CHOICES["log_level"], help="WARRENMQ_LOG_LEVEL (default info)")
    add("--frame-max", type=int, help="WARRENMQ_FRAME_MAX (default 131072)")
    add("--channel-max", type=int, help="WARRENMQ_CHANNEL_MAX (default 2047)")
    add(
        "--heartbeat",
        type=int,
        help="suggested heartbeat in seconds, 0 = off (WARRENMQ_HEARTBEAT; default 60)",
    )
    add(
        "--max-message-size",
        type=int,
        help="bytes (WARRENMQ_MAX_MESSAGE_SIZE; default: the profile's, 128 MiB for 3.13, 16 MiB for 4.x)",
    )
    add(
        "--consumer-timeout",
        type=int,
        help="ms a delivery may stay unacknowledged before its channel is "
        "closed with 406; 0 = off (WARRENMQ_CONSUMER_TIMEOUT; RabbitMQ's consumer_timeout, default 30 min)",
    )
    add(
        "--profile",
        choices=sorted(PROFILES),
        help="RabbitMQ version whose behaviour to follow where releases differ (WARRENMQ_PROFILE)",
    )
    add(
        "--report-as",
        choices=CHOICES["report_as"],
        help="product and version in server-properties and "
        "the overview: the RabbitMQ release the profile emulates (default) or WarrenMQ (WARRENMQ_REPORT_AS)",
    )
    add("--name-seed", type=int, default=None, help="seed for server-generated names (tests)")
    add(
        "--management-port",
        type=int,
        help="management HTTP API port, 0 = ephemeral, -1 = off (WARRENMQ_MANAGEMENT_PORT; default 15672)",
    )
    add(
        "--prometheus-port",
        type=int,
        help="rabbitmq_prometheus endpoint port, 0 = ephemeral, -1 = off (WARRENMQ_PROMETHEUS_PORT, "
        "prometheus.tcp.port; default 15692)",
    )
    add(
        "--definitions",
        help="RabbitMQ definitions JSON applied at boot (WARRENMQ_DEFINITIONS, load_definitions)",
    )
    add(
        "--data-dir",
        help="durable store directory; 'none' keeps everything in memory and a restart loses it "
        "(WARRENMQ_DATA_DIR, RABBITMQ_MNESIA_DIR; default $RABBITMQ_MNESIA_BASE/$RABBITMQ_NODENAME "
        "when RABBITMQ_MNESIA_BASE is set, else ./warrenmq-data; rabbitmq-server: RabbitMQ's "
        "/var/lib/rabbitmq/mnesia/rabbit@<host>)",
    )
    add(
        "--store",
        help="the durable store: postgresql://user:password@host:port/db keeps it in PostgreSQL, so a "
        "standby on another machine can take over (WARRENMQ_STORE, warrenmq.store; default SQLite "
        "under --data-dir)",
    )
    # Set by the rabbitmq-server stand-in (broker/ctl/server.py): RabbitMQ's default file layout.
    add("--rabbitmq-layout", action="store_true", help=argparse.SUPPRESS)
    add(
        "--fsync",
        choices=CHOICES["fsync"],
        help="always: fsync every group commit before confirming it; "
        "batch: fsync at WAL checkpoints (survives a process crash, not a power loss); "
        "never: leave it to the OS (WARRENMQ_FSYNC; default always)",
    )
    add(
        "--ha-lease-s",
        type=float,
        help="high availability on a PostgreSQL store: the active node's lease in seconds; a standby "
        "takes over at most this long after the active node stopped renewing it (WARRENMQ_HA_LEASE_S; "
        "default 3)",
    )
    add(
        "--config-file",
        help="rabbitmq.conf to read, 'none' = no file (WARRENMQ_CONFIG_FILE, "
        "RABBITMQ_CONFIG_FILE; default /etc/rabbitmq/rabbitmq.conf and conf.d/*.conf when present)",
    )
    add(
        "--enabled-plugins-file",
        help="(WARRENMQ_ENABLED_PLUGINS_FILE, RABBITMQ_ENABLED_PLUGINS_FILE; "
        "default /etc/rabbitmq/enabled_plugins when present; absent: every plugin WarrenMQ has)",
    )
    add(
        "--planes",
        choices=CHOICES["planes"],
        help="off: a baseline for measuring what the planes cost (warrenmq bench --plane-cost), never for "
        "service: no statistics sampler, management or prometheus listener, no resource alarms, every "
        "permission granted (WARRENMQ_PLANES; default on)",
    )
    add_journal_arguments(parser)


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    env = layers.environ()
    group = parser.add_argument_group("event journal (off unless --journal-dir is given)")
    group.add_argument(
        "--journal-dir", default=env.get("WARRENMQ_JOURNAL_DIR") or None, help="WARRENMQ_JOURNAL_DIR"
    )
    group.add_argument(
        "--journal-mode",
        choices=("compact", "full"),
        default=env.get("WARRENMQ_JOURNAL_MODE", "compact"),
        help="compact: one row per delivery; full: every event (WARRENMQ_JOURNAL_MODE)",
    )
    group.add_argument(
        "--journal-sample",
        type=float,
        default=float(env.get("WARRENMQ_JOURNAL_SAMPLE", "1.0")),
        help="fraction of messages journaled, decided per message at publish (WARRENMQ_JOURNAL_SAMPLE)",
    )
    group.add_argument(
        "--journal-capture-routing",
        action="store_true",
        default=env.get("WARRENMQ_JOURNAL_CAPTURE_ROUTING", "") in ("1", "true"),
        help="also record exchange, routing key, headers and queues reached, for route replay",
    )
    group.add_argument("--journal-format", choices=("parquet", "jsonl"), default=None)
    group.add_argument("--journal-rotate-seconds", type=float, default=60.0)
    group.add_argument("--journal-rotate-mb", type=float, default=64.0)


def journal_config_from_args(args: argparse.Namespace) -> JournalConfig | None:
    if not args.journal_dir:
        return None
    if not 0.0 < args.journal_sample <= 1.0:
        raise SystemExit("warrenmq: --journal-sample must be within (0, 1]")
    if args.journal_rotate_seconds <= 0 or args.journal_rotate_mb <= 0:
        raise SystemExit("warrenmq: journal rotation limits must be positive")
    return JournalConfig(
        directory=args.journal_dir,
        mode=args.journal_mode,
        sample=args.journal_sample,
        capture_routing=args.journal_capture_routing,
        format=args.journal_format,
        rotate_s=args.journal_rotate_seconds,
        rotate_bytes=int(args.journal_rotate_mb * 1024 * 1024),
    )


def erlang_layers(settings: FileSettings, environ: Mapping[str, str]) -> list[str]:
    """advanced.config, then RABBITMQ_SERVER_START_ARGS, over rabbitmq.conf (RabbitMQ merges advanced.config
    over the generated config, and erl's ``-App Key Value`` arguments win over both); the advanced.config
    read, for the list of config files."""
    read: list[str] = []
    on_top = FileSettings()
    prefix = environ.get("WARRENMQ_SYS_PREFIX", "").rstrip("/")
    advanced = environ.get("RABBITMQ_ADVANCED_CONFIG_FILE") or f"{prefix}/etc/rabbitmq/advanced.config"
    if Path(advanced).is_file():
        apply_advanced_config(advanced, on_top)
        read.append(advanced)
    if environ.get(START_ARGS, "").strip():
        apply_start_args(environ[START_ARGS], on_top)
    settings.values.update(on_top.values)
    settings.warnings.extend(on_top.warnings)
    return read


class Loaded:
    """Every setting with its source, the files read, the plugins and the warnings, before validation."""

    def __init__(self, args: argparse.Namespace, environ: Mapping[str, str]) -> None:
        cli: dict[str, Any] = {name: getattr(args, name, None) for name in layers.BY_NAME}
        if args.users:
            cli["users"] = dict(args.users)
        try:
            self.files = layers.config_file_paths(getattr(args, "config_file", None), environ)
            settings = layers.read_file_settings(self.files)
            self.files += erlang_layers(settings, environ)
            self.plugins_file, named = layers.enabled_plugins_path(
                getattr(args, "enabled_plugins_file", None), environ
            )
            self.enabled_plugins = layers.read_enabled_plugins(self.plugins_file, named)
            self.resolved = layers.resolve(
                cli, settings, environ, rabbitmq_layout=bool(getattr(args, "rabbitmq_layout", False))
            )
        except (ConfigFileError, layers.ConfigError) as error:
            raise SystemExit(f"warrenmq: {error}") from None
        self.warnings = list(settings.warnings)
        if named and not Path(self.plugins_file).is_file():
            self.warnings.append(f"{self.plugins_file}: enabled_plugins file not found; no plugins enabled")
        missing = unimplemented(self.enabled_plugins)
        if missing:
            self.warnings.append(
                f"{self.plugins_file}: plugins not implemented by WarrenMQ, ignored: {', '.join(missing)}"
            )

    def value(self, name: str) -> Any:
        return self.resolved[name].value

    def plugin_on(self, name: str) -> bool:
        return self.enabled_plugins is None or name in self.enabled_plugins


def _check(loaded: Loaded) -> None:
    for name, choices in CHOICES.items():
        if loaded.value(name) not in choices:
            raise SystemExit(
                f"warrenmq: {name} must be one of {', '.join(choices)} ({loaded.resolved[name].source})"
            )
    if loaded.value("profile") not in PROFILES:
        raise SystemExit(
            f"warrenmq: unknown profile {loaded.value('profile')!r}; one of {', '.join(PROFILES)}"
        )
    checks: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
        ("frame_max", lambda v: v >= FRAME_MIN_SIZE, f"must be at least {FRAME_MIN_SIZE}"),
        ("channel_max", lambda v: 0 < v <= MAX_CHANNEL_MAX, f"must be within 1..{MAX_CHANNEL_MAX}"),
        # rabbit.schema's range for it.
        ("session_max_per_connection", lambda v: 0 < v <= 65535, "must be within 1..65535"),
        ("consumer_timeout", lambda v: v >= 0, "must be 0 (off) or a number of milliseconds"),
        ("heartbeat", lambda v: 0 <= v <= 65535, "must be within 0..65535"),
        (
            "max_message_size",
            lambda v: v is None or 0 < v <= MAX_MESSAGE_SIZE_LIMIT,
            f"must be within 1..{MAX_MESSAGE_SIZE_LIMIT}",
        ),
    )
    for name, ok, text in checks:
        if not ok(loaded.value(name)):
            flag = "--" + name.replace("_", "-")
            raise SystemExit(f"warrenmq: {flag} {text} ({loaded.resolved[name].source})")


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> ServerConfig:
    return config_from_loaded(Loaded(args, layers.environ() if environ is None else environ), args)


def config_from_loaded(loaded: Loaded, args: argparse.Namespace) -> ServerConfig:
    """The ServerConfig; ``loaded.warnings`` are for the caller to log once logging is set up."""
    _check(loaded)
    value = loaded.value
    profile = PROFILES[value("profile")]
    users = value("users") or {value("default_user"): value("default_pass")}
    vhosts = value("vhosts") or (value("default_vhost"),)
    planes = value("planes") == "on"
    management_port = value("management_port")
    if management_port < 0 or not loaded.plugin_on(MANAGEMENT) or not planes:
        management_port = None
    rabbitmq = value("report_as") == "rabbitmq"
    return ServerConfig(
        host=value("host"),
        port=value("port"),
        users=dict(users),
        vhosts=tuple(vhosts),
        log_format=value("log_format"),
        log_level=value("log_level"),
        name_seed=args.name_seed,
        management_port=management_port,
        definitions=value("definitions") or None,
        profile=profile,
        session=SessionConfig(
            frame_max=value("frame_max"),
            channel_max=value("channel_max"),
            session_max_per_connection=value("session_max_per_connection"),
            heartbeat_s=value("heartbeat"),
            max_message_size=value("max_message_size") or profile.max_message_size,
            pre_auth_frame_max=profile.pre_auth_frame_max,
            consumer_timeout_ms=value("consumer_timeout"),
            connection_max=value("connection_max"),
            consumer_max_per_channel=value("consumer_max_per_channel"),
            # EXTERNAL is registered by rabbitmq_auth_mechanism_ssl: offered only with the plugin on.
            auth_mechanisms=tuple(
                name
                for name in value("auth_mechanisms")
                if name != "EXTERNAL" or loaded.plugin_on(AUTH_MECHANISM_SSL)
            ),
            auth_mechanisms_configured=loaded.resolved["auth_mechanisms"].source != "default",
            product="RabbitMQ" if rabbitmq else "WarrenMQ",
            product_version=profile.rabbitmq_version if rabbitmq else __version__,
            cluster_name=value("cluster_name"),
            node_name=value("node_name"),
            loopback_users=tuple(value("loopback_users")),
        ),
        journal=journal_config_from_args(args),
        data_dir=None if str(value("data_dir")).strip().lower() in ("none", "") else value("data_dir"),
        fsync=value("fsync"),
        store=_store(value("store")),
        ha_lease_s=value("ha_lease_s"),
        prometheus_port=(
            value("prometheus_port")
            if loaded.plugin_on(PROMETHEUS) and value("prometheus_port") >= 0 and planes
            else None
        ),
        collect_statistics_interval_ms=max(value("collect_statistics_interval"), 1),
        event_exchange_vhost=value("event_exchange_vhost"),
        default_user_tags=tuple(value("default_user_tags")),
        default_permissions=tuple(value("default_permissions")),
        loopback_users=tuple(value("loopback_users")),
        vm_memory_high_watermark=value("vm_memory_high_watermark"),
        vm_memory_high_watermark_paging_ratio=value("vm_memory_high_watermark_paging_ratio"),
        disk_free_limit=value("disk_free_limit"),
        planes=planes,
        enabled_plugins=loaded.enabled_plugins,
        node_name=value("node_name"),
        ssl_port=value("ssl_port"),
        ssl_options=TLSOptions(**(value("ssl_options") or {})),
        ssl_handshake_timeout_s=value("ssl_handshake_timeout") / 1000,
        ssl_cert_login_from=value("ssl_cert_login_from"),
        management_ssl_port=value("management_ssl_port") if management_port is not None else None,
        management_http=value("management_ssl_port") is None
        or loaded.resolved["management_port"].source != "default",
        management_ssl=TLSOptions(**(value("management_ssl") or {})),
        dist_port=value("dist_port"),
        dist_port_configured=not loaded.resolved["dist_port"].source.startswith("default"),
        pid_file=value("pid_file") or None,
        log_file=None if value("logs") in ("-", "", None) else value("logs"),
        log_console=value("log_console"),
        log_file_format=value("log_file_format"),
        config_files=tuple(loaded.files),
        enabled_plugins_file=loaded.plugins_file,
    )


def _store(value: str | None) -> str | None:
    """``--store``: a PostgreSQL URL, or none/sqlite for the default (SQLite under the data directory)."""
    if value is None or value.strip().lower() in ("", "none", "sqlite"):
        return None
    if not value.startswith(("postgresql://", "postgres://")):
        shown = value.split("@")[-1]  # never echo a password
        expected = "postgresql://user:password@host:port/db"
        raise SystemExit(f"warrenmq: --store: expected {expected}, got {shown!r}")
    return value
