"""Server configuration from flags and WARRENMQ_* environment variables (flags win), with RabbitMQ's
defaults.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from broker.core.profile import DEFAULT_PROFILE, PROFILES, Profile
from broker.session.config import (
    DEFAULT_CHANNEL_MAX,
    DEFAULT_CONSUMER_TIMEOUT_MS,
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT_S,
    SessionConfig,
)

FRAME_MIN_SIZE = 4096
DEFAULT_DATA_DIR = "./warrenmq-data"
MAX_CHANNEL_MAX = 65535


@dataclass(frozen=True)
class JournalConfig:
    """The event journal (broker/journal); ``None`` in ServerConfig = off, the default."""

    directory: str
    mode: str = "compact"
    sample: float = 1.0
    capture_routing: bool = False
    format: str | None = None  # None: Parquet when pyarrow is installed, else JSON Lines
    rotate_s: float = 60.0
    rotate_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class ServerConfig:
    host: str = "0.0.0.0"
    port: int = 5672
    users: Mapping[str, str] = field(default_factory=lambda: {"guest": "guest"})
    vhosts: tuple[str, ...] = ("/",)
    log_format: str = "console"
    log_level: str = "info"
    name_seed: int | None = None
    management_port: int | None = 15672  # None: no management HTTP listener
    definitions: str | None = None
    session: SessionConfig = field(default_factory=SessionConfig)
    journal: JournalConfig | None = None
    profile: Profile = DEFAULT_PROFILE
    # Durable store directory (SQLite); None: nothing outlives the process (embedded brokers, tests).
    data_dir: str | None = None
    fsync: str = "always"


def _env(name: str, default: str) -> str:
    return os.environ.get(f"WARRENMQ_{name}", default)


def parse_user(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected USER:PASSWORD, got {text!r}")
    return name, password


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=_env("HOST", "0.0.0.0"), help="listen address (WARRENMQ_HOST)")
    parser.add_argument(
        "--port", type=int, default=int(_env("PORT", "5672")), help="AMQP port, 0 = ephemeral (WARRENMQ_PORT)"
    )
    parser.add_argument(
        "--user",
        dest="users",
        action="append",
        type=parse_user,
        help="USER:PASSWORD, repeatable (WARRENMQ_USERS=u1:p1,u2:p2; default guest:guest)",
    )
    parser.add_argument(
        "--vhost",
        dest="vhosts",
        action="append",
        help="virtual host, repeatable (WARRENMQ_VHOSTS; default /)",
    )
    parser.add_argument(
        "--log-format",
        choices=("console", "json"),
        default=_env("LOG_FORMAT", "console"),
        help="WARRENMQ_LOG_FORMAT",
    )
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default=_env("LOG_LEVEL", "info")
    )
    parser.add_argument(
        "--frame-max",
        type=int,
        default=int(_env("FRAME_MAX", str(DEFAULT_FRAME_MAX))),
        help="WARRENMQ_FRAME_MAX",
    )
    parser.add_argument(
        "--channel-max",
        type=int,
        default=int(_env("CHANNEL_MAX", str(DEFAULT_CHANNEL_MAX))),
        help="WARRENMQ_CHANNEL_MAX",
    )
    parser.add_argument(
        "--heartbeat",
        type=int,
        default=int(_env("HEARTBEAT", str(DEFAULT_HEARTBEAT_S))),
        help="suggested heartbeat in seconds, 0 = off (WARRENMQ_HEARTBEAT)",
    )
    parser.add_argument(
        "--max-message-size",
        type=int,
        default=int(_env("MAX_MESSAGE_SIZE", "0")) or None,
        help="bytes (WARRENMQ_MAX_MESSAGE_SIZE; default: the profile's, 128 MiB for 3.13, 16 MiB for 4.x)",
    )
    parser.add_argument(
        "--consumer-timeout",
        type=int,
        default=int(_env("CONSUMER_TIMEOUT", str(DEFAULT_CONSUMER_TIMEOUT_MS))),
        help="ms a delivery may stay unacknowledged before its channel is closed with 406; 0 = off "
        "(WARRENMQ_CONSUMER_TIMEOUT; RabbitMQ's consumer_timeout, default 30 min)",
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=_env("PROFILE", DEFAULT_PROFILE.name),
        help="RabbitMQ version whose behaviour to follow where releases differ (WARRENMQ_PROFILE)",
    )
    parser.add_argument("--name-seed", type=int, default=None, help="seed for server-generated names (tests)")
    parser.add_argument(
        "--management-port",
        type=int,
        default=int(_env("MANAGEMENT_PORT", "15672")),
        help="management HTTP API port, 0 = ephemeral, -1 = off (WARRENMQ_MANAGEMENT_PORT)",
    )
    parser.add_argument(
        "--definitions",
        default=_env("DEFINITIONS", "") or None,
        help="RabbitMQ definitions JSON applied at boot (WARRENMQ_DEFINITIONS)",
    )
    parser.add_argument(
        "--data-dir",
        default=_env("DATA_DIR", DEFAULT_DATA_DIR),
        help="durable store directory; 'none' keeps everything in memory and a restart loses it "
        f"(WARRENMQ_DATA_DIR; default {DEFAULT_DATA_DIR})",
    )
    parser.add_argument(
        "--fsync",
        choices=("always", "batch", "never"),
        default=_env("FSYNC", "always"),
        help="always: fsync every group commit before confirming it; batch: fsync at WAL checkpoints "
        "(survives a process crash, not a power loss); never: leave it to the OS (WARRENMQ_FSYNC)",
    )
    add_journal_arguments(parser)


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("event journal (off unless --journal-dir is given)")
    group.add_argument("--journal-dir", default=_env("JOURNAL_DIR", "") or None, help="WARRENMQ_JOURNAL_DIR")
    group.add_argument(
        "--journal-mode",
        choices=("compact", "full"),
        default=_env("JOURNAL_MODE", "compact"),
        help="compact: one row per delivery; full: every event (WARRENMQ_JOURNAL_MODE)",
    )
    group.add_argument(
        "--journal-sample",
        type=float,
        default=float(_env("JOURNAL_SAMPLE", "1.0")),
        help="fraction of messages journaled, decided per message at publish (WARRENMQ_JOURNAL_SAMPLE)",
    )
    group.add_argument(
        "--journal-capture-routing",
        action="store_true",
        default=_env("JOURNAL_CAPTURE_ROUTING", "") in ("1", "true"),
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


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    users = args.users
    if not users:
        env_users = _env("USERS", "guest:guest")
        users = [parse_user(item) for item in env_users.split(",") if item]
    vhosts: Sequence[str] = args.vhosts or [v for v in _env("VHOSTS", "/").split(",") if v]
    if args.frame_max < FRAME_MIN_SIZE:
        raise SystemExit(f"warrenmq: --frame-max must be at least {FRAME_MIN_SIZE}")
    if not 0 < args.channel_max <= MAX_CHANNEL_MAX:
        raise SystemExit(f"warrenmq: --channel-max must be within 1..{MAX_CHANNEL_MAX}")
    if args.consumer_timeout < 0:
        raise SystemExit("warrenmq: --consumer-timeout must be 0 (off) or a number of milliseconds")
    if not 0 <= args.heartbeat <= 65535:
        raise SystemExit("warrenmq: --heartbeat must be within 0..65535")
    profile = PROFILES[args.profile]
    return ServerConfig(
        host=args.host,
        port=args.port,
        users=dict(users),
        vhosts=tuple(vhosts),
        log_format=args.log_format,
        log_level=args.log_level,
        name_seed=args.name_seed,
        management_port=None if args.management_port < 0 else args.management_port,
        definitions=args.definitions,
        profile=profile,
        session=SessionConfig(
            frame_max=args.frame_max,
            channel_max=args.channel_max,
            heartbeat_s=args.heartbeat,
            max_message_size=args.max_message_size or profile.max_message_size,
            pre_auth_frame_max=profile.pre_auth_frame_max,
            consumer_timeout_ms=args.consumer_timeout,
        ),
        journal=journal_config_from_args(args),
        data_dir=None if args.data_dir.strip().lower() in ("none", "") else args.data_dir,
        fsync=args.fsync,
    )
