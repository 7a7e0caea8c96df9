"""The resolved server configuration: frozen values the server, the management plane and the CLIs read."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple
from urllib.parse import urlsplit

from broker.core.model.profile import DEFAULT_PROFILE, Profile
from broker.session.config import SessionConfig

# NamedTuples, not dataclasses: a dataclass compiles its generated methods at import, several ms for
# ServerConfig alone (start-up cost). Copies with a change are ``config._replace(...)``.


class JournalConfig(NamedTuple):
    """The event journal (broker/journal); ``None`` in ServerConfig = off, the default."""

    directory: str
    mode: str = "compact"
    sample: float = 1.0
    capture_routing: bool = False
    format: str | None = None  # None: Parquet when pyarrow is installed, else JSON Lines
    rotate_s: float = 60.0
    rotate_bytes: int = 64 * 1024 * 1024


class Watermark(NamedTuple):
    """vm_memory_high_watermark.* / disk_free_limit.*: a fraction (``relative``) or bytes (``absolute``).

    Carried for the resource-alarm monitor; nothing enforces them yet."""

    kind: str  # "relative" | "absolute"
    value: float


class TLSOptions(NamedTuple):
    """ssl_options.* (AMQPS) or management.ssl.* (HTTPS), with RabbitMQ's names: PEM files, peer
    verification, protocol versions and cipher suites (empty: the ssl module's defaults)."""

    certfile: str | None = None
    keyfile: str | None = None
    cacertfile: str | None = None
    password: str | None = None
    verify: str = "verify_none"  # verify_peer: ask for and check a client certificate
    fail_if_no_peer_cert: bool = False
    versions: tuple[str, ...] = ()  # "tlsv1.2", "tlsv1.3"
    ciphers: tuple[str, ...] = ()


class ServerConfig(NamedTuple):
    host: str = "0.0.0.0"
    port: int = 5672
    users: Mapping[str, str] = MappingProxyType({"guest": "guest"})
    vhosts: tuple[str, ...] = ("/",)
    log_format: str = "console"
    log_level: str = "info"
    name_seed: int | None = None
    management_port: int | None = 15672  # None: no management HTTP listener
    definitions: str | None = None
    session: SessionConfig = SessionConfig()
    journal: JournalConfig | None = None
    profile: Profile = DEFAULT_PROFILE
    # Durable store directory (SQLite); None: nothing outlives the process (embedded brokers, tests).
    data_dir: str | None = None
    # A PostgreSQL store instead (--store postgresql://user:password@host:port/db): the durable state lives
    # there and the data directory keeps only local files (paged-out messages).
    store: str | None = None
    fsync: str = "always"
    # High availability (broker/ha, on whenever the store is PostgreSQL): how long the active node's lease
    # lasts without a renewal; a standby takes over at most this long after the active node died.
    ha_lease_s: float = 3.0
    # rabbitmq.conf settings carried for the planes that use them (prometheus endpoint, access control,
    # resource alarms); see docs/configuration.md.
    prometheus_port: int | None = 15692
    collect_statistics_interval_ms: int = 5000
    event_exchange_vhost: str = "/"  # rabbitmq.conf event_exchange.vhost
    default_user_tags: tuple[str, ...] = ("administrator",)
    default_permissions: tuple[str, str, str] = (".*", ".*", ".*")
    loopback_users: tuple[str, ...] = ()
    vm_memory_high_watermark: Watermark = Watermark("relative", 0.4)
    # Queues page message bodies to disk past this fraction of the watermark (above 1: never).
    vm_memory_high_watermark_paging_ratio: float = 0.5
    disk_free_limit: Watermark = Watermark("absolute", 50_000_000)
    # False (--planes off): the baseline `warrenmq bench --plane-cost` compares with, never for service: no
    # statistics sampler (no management or prometheus listener), no resource alarms, every permission
    # granted. The hot path's counters and permission-cache lookup run either way.
    planes: bool = True
    # Plugins switched on by enabled_plugins (None: no file, every plugin WarrenMQ implements is on).
    enabled_plugins: tuple[str, ...] | None = None
    node_name: str = "rabbit@localhost"
    # TLS (listeners.ssl.default, ssl_options.*, management.ssl.*): no TLS listener unless a port is set.
    ssl_port: int | None = None
    ssl_options: TLSOptions = TLSOptions()
    ssl_handshake_timeout_s: float = 5.0  # ssl_handshake_timeout, 5000 ms in RabbitMQ
    # rabbitmq_auth_mechanism_ssl: where the EXTERNAL mechanism takes the user name from.
    ssl_cert_login_from: str = "distinguished_name"
    management_ssl_port: int | None = None
    # Plain HTTP beside HTTPS only when management.tcp.* is configured too (rabbit_mgmt_app:
    # get_listeners_config): with management.ssl.* alone, RabbitMQ serves HTTPS only.
    management_http: bool = True
    management_ssl: TLSOptions = TLSOptions()
    # The CLI channel's port (RABBITMQ_DIST_PORT; None: no CLI channel, as for embedded brokers; 0:
    # ephemeral), and where `serve` writes its pid (RABBITMQ_PID_FILE) and its log (RABBITMQ_LOGS; None:
    # the console).
    dist_port: int | None = None
    # False: the default AMQP port + 20000, which falls back to an ephemeral port when taken (RabbitMQ
    # would not boot); True: RABBITMQ_DIST_PORT or rabbitmq-env.conf named it, and taken it stops the node.
    dist_port_configured: bool = False
    pid_file: str | None = None
    log_file: str | None = None
    # rabbitmq.conf log.console (None: not set, the console only without a log file, as RabbitMQ) and
    # log.file.formatter (None: log_format, which log.console.formatter and WARRENMQ_LOG_FORMAT set).
    log_console: bool | None = None
    log_file_format: str | None = None
    # What `rabbitmq-diagnostics status` reports the node read: its configuration files and enabled_plugins.
    config_files: tuple[str, ...] = ()
    enabled_plugins_file: str | None = None


def store_display(config: ServerConfig) -> str | None:
    """The store as the ready line and the start-up log name it: ``postgresql://host:port/db`` (never the
    user or the password), ``sqlite:<data dir>``, or None (in memory)."""
    if config.store is not None:
        # The netloc after any user:password@, not hostname and port: a libpq multi-host DSN (a replicated
        # store, "a:5432,b:5432") has no single port for urlsplit to read.
        parts = urlsplit(config.store)
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2] or 'localhost'}{parts.path}"
    return None if config.data_dir is None else f"sqlite:{config.data_dir}"
