"""rabbitmq.conf keys WarrenMQ has, turned into its settings (key names and value formats as in RabbitMQ's
rabbitmq.conf.example and configure guide).

A key WarrenMQ does not have gives one warning and is ignored (RabbitMQ would refuse it; a drop-in must not
fail on a file written for RabbitMQ). A bad value for a key it has stops the broker with file and line.
"""

from __future__ import annotations

import re
from typing import Any

from broker.config.model import Watermark
from broker.config.sysctl import ConfigFileError, Entry, parse_bool, parse_size

# RabbitMQ's log levels (log.*.level) mapped onto the four the broker's logger has.
LOG_LEVELS = {
    "debug": "debug",
    "info": "info",
    "notice": "info",
    "warning": "warning",
    "error": "error",
    "critical": "error",
    "alert": "error",
    "emergency": "error",
    "none": "error",
}
_INT_KEYS = {
    "heartbeat": "heartbeat",
    "frame_max": "frame_max",
    "channel_max": "channel_max",
    "session_max_per_connection": "session_max_per_connection",
    "max_message_size": "max_message_size",
    "consumer_timeout": "consumer_timeout",
    "management.tcp.port": "management_port",
    "prometheus.tcp.port": "prometheus_port",
    "collect_statistics_interval": "collect_statistics_interval",
}
_STRING_KEYS = {
    "default_user": "default_user",
    "default_pass": "default_pass",
    "default_vhost": "default_vhost",
    "cluster_name": "cluster_name",
    "load_definitions": "definitions",
    "event_exchange.vhost": "event_exchange_vhost",
    "warrenmq.store": "store",  # WarrenMQ's own key: --store
}


# Pattern strings: re compiles each at its first use and caches it, so none compiles at import.
# Known to RabbitMQ and understood here, but with nothing to configure in WarrenMQ: accepted silently.
_ACCEPTED = (
    r"log\.(console|file|exchange|journald|syslog)(\.[a-z_.]+)?|log\.[a-z_]+\.level"
    r"|num_acceptors\.(tcp|ssl)|handshake_timeout|reverse_dns_lookups"
    r"|management_agent\.disable_metrics_collector"
)
_LISTENER = r"(?:(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+|[A-Za-z0-9.\-]+):)?(\d+)"


class FileSettings:
    """Settings from the configuration files: name -> (value, "file:line key"), plus warnings to log.
    A plain class, not a dataclass: start-up cost."""

    __slots__ = ("families", "values", "warnings")

    def __init__(self) -> None:
        self.values: dict[str, tuple[Any, str]] = {}
        self.warnings: list[str] = []
        # The NAME.SUB = value families (default_user_tags.*, loopback_users.*, default_permissions.*) so far.
        self.families: dict[str, dict[str, Any]] = {}

    def set(self, name: str, value: Any, entry: Entry) -> None:
        self.values[name] = (value, f"{entry.where()} {entry.key}")


def _int(entry: Entry) -> int:
    try:
        return int(entry.value)
    except ValueError:
        raise ConfigFileError(
            entry.path, entry.line, f"{entry.key}: expected an integer, got {entry.value!r}"
        ) from None


def _limit(entry: Entry) -> int | None:
    """connection_max / consumer_max_per_channel: a non-negative integer or ``infinity`` (None)."""
    if entry.value.strip().lower() == "infinity":
        return None
    value = _int(entry)
    if value < 0:
        raise ConfigFileError(entry.path, entry.line, f"{entry.key}: expected an integer >= 0 or infinity")
    return value


def _fraction(entry: Entry) -> float:
    try:
        value = float(entry.value)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ConfigFileError(entry.path, entry.line, f"{entry.key}: expected a number, got {entry.value!r}")
    return value


def _size(entry: Entry) -> int:
    size = parse_size(entry.value)
    if size is None:
        raise ConfigFileError(
            entry.path,
            entry.line,
            f"{entry.key}: expected bytes (e.g. 1073741824, 2GB, 512MiB), got {entry.value!r}",
        )
    return size


def _boolean(entry: Entry) -> bool:
    value = parse_bool(entry.value)
    if value is None:
        raise ConfigFileError(
            entry.path, entry.line, f"{entry.key}: expected true or false, got {entry.value!r}"
        )
    return value


def _listener(entry: Entry, settings: FileSettings) -> None:
    """listeners.tcp.NAME = PORT | IP:PORT ([::1]:5672 or ::1:5672 for IPv6); WarrenMQ binds one."""
    match = re.fullmatch(_LISTENER, entry.value)
    if match is None or not 0 <= int(match.group(2)) <= 65535:
        raise ConfigFileError(
            entry.path, entry.line, f"{entry.key}: expected PORT or IP:PORT, got {entry.value!r}"
        )
    if "port" in settings.values and settings.values["port"][1].split()[-1] != entry.key:
        settings.warnings.append(
            f"{entry.where()}: only one AMQP listener is supported; {entry.key} replaces it"
        )
    settings.set("port", int(match.group(2)), entry)
    if match.group(1):
        settings.set("host", match.group(1).strip("[]"), entry)


def _log_level(entry: Entry, settings: FileSettings) -> None:
    level = LOG_LEVELS.get(entry.value.lower())
    if level is None:
        raise ConfigFileError(
            entry.path,
            entry.line,
            f"{entry.key}: expected one of {', '.join(LOG_LEVELS)}, got {entry.value!r}",
        )
    settings.set("log_level", level, entry)


def _watermark(entry: Entry) -> Watermark:
    kind = entry.key.rsplit(".", 1)[1]
    return Watermark(kind, _fraction(entry) if kind == "relative" else _size(entry))


_TLS_FILES = ("certfile", "keyfile", "cacertfile", "password")
_TLS_LISTS = ("versions", "ciphers")
_LOGIN_FROM = ("distinguished_name", "common_name", "subject_alternative_name")


def _tls_option(entry: Entry, settings: FileSettings, family: str, sub: str) -> None:
    """ssl_options.SUB / management.ssl.SUB: collected into one dict per family (TLSOptions' fields)."""
    options = settings.families.setdefault(family, {})
    head, _, index = sub.partition(".")
    if sub in _TLS_FILES:
        options[sub] = entry.value
    elif sub == "verify":
        if entry.value not in ("verify_peer", "verify_none"):
            raise ConfigFileError(
                entry.path,
                entry.line,
                f"{entry.key}: expected verify_peer or verify_none, got {entry.value!r}",
            )
        options[sub] = entry.value
    elif sub == "fail_if_no_peer_cert":
        options[sub] = _boolean(entry)
    elif head in _TLS_LISTS and index:
        items = options.setdefault(f"_{head}", {})
        items[index] = entry.value
        options[head] = tuple(items[key] for key in sorted(items, key=lambda k: (len(k), k)))
    else:
        settings.warnings.append(f"{entry.where()}: {entry.key}: TLS option not implemented; ignored")
        return
    settings.set(family, {k: v for k, v in options.items() if not k.startswith("_")}, entry)


def _tls_entry(entry: Entry, settings: FileSettings) -> bool:
    """The TLS keys of the core and of rabbitmq_auth_mechanism_ssl / the management plugin; False: not one."""
    key = entry.key
    if key.startswith("listeners.ssl."):
        match = re.fullmatch(_LISTENER, entry.value)
        if match is None or not 0 <= int(match.group(2)) <= 65535:
            raise ConfigFileError(
                entry.path, entry.line, f"{entry.key}: expected PORT or IP:PORT, got {entry.value!r}"
            )
        settings.set("ssl_port", int(match.group(2)), entry)
    elif key.startswith("ssl_options."):
        _tls_option(entry, settings, "ssl_options", key.removeprefix("ssl_options."))
    elif key == "management.ssl.port":
        settings.set("management_ssl_port", _int(entry), entry)
    elif key.startswith("management.ssl."):
        _tls_option(entry, settings, "management_ssl", key.removeprefix("management.ssl."))
    elif key == "ssl_handshake_timeout":
        settings.set("ssl_handshake_timeout", _int(entry), entry)
    elif key == "ssl_cert_login_from":
        if entry.value not in _LOGIN_FROM:
            raise ConfigFileError(
                entry.path, entry.line, f"{entry.key}: expected one of {', '.join(_LOGIN_FROM)}"
            )
        settings.set(key, entry.value, entry)
    elif key.startswith("auth_mechanisms."):
        mechanisms = settings.families.setdefault("auth_mechanisms", {})
        mechanisms[key.removeprefix("auth_mechanisms.")] = entry.value
        settings.set("auth_mechanisms", tuple(mechanisms.values()), entry)
    else:
        return False
    return True


_FAMILIES = ("default_user_tags", "loopback_users", "default_permissions")
_PERMISSIONS = ("configure", "read", "write")


def _family(entry: Entry, settings: FileSettings) -> None:
    """default_user_tags.TAG = bool, loopback_users.USER = bool, default_permissions.KIND = regex: together
    they replace RabbitMQ's default list (cuttlefish's translation collects every key of the family)."""
    name, sub = entry.key.split(".", 1)
    items = settings.families.setdefault(name, {})
    if name == "default_permissions":
        if sub not in _PERMISSIONS:
            settings.warnings.append(f"{entry.where()}: unknown setting {entry.key!r} ignored")
            return
        items[sub] = entry.value
        settings.set(name, tuple(items.get(kind, ".*") for kind in _PERMISSIONS), entry)
    else:
        items[sub] = _boolean(entry)
        settings.set(name, tuple(item for item, on in items.items() if on), entry)


def apply_entry(entry: Entry, settings: FileSettings) -> None:
    key = entry.key
    if key in _INT_KEYS:
        settings.set(_INT_KEYS[key], _int(entry), entry)
    elif key in _STRING_KEYS:
        settings.set(_STRING_KEYS[key], entry.value, entry)
    elif key == "management.load_definitions":
        # The management plugin's older name for load_definitions; the core key wins when both are set.
        if "definitions" not in settings.values or "management" in settings.values["definitions"][1]:
            settings.set("definitions", entry.value, entry)
    elif key in ("log.console.level", "log.default.level", "log.file.level"):
        if key == "log.console.level" or "log_level" not in settings.values:
            _log_level(entry, settings)
    elif key == "log.console.formatter":
        settings.set("log_format", "json" if entry.value == "json" else "console", entry)
    elif key == "log.file.formatter":
        settings.set("log_file_format", "json" if entry.value == "json" else "console", entry)
    elif key == "log.console":
        settings.set("log_console", _boolean(entry), entry)
    elif key == "log.file" and parse_bool(entry.value) is False:
        settings.set("logs", "-", entry)  # log.file = false: no log file, whatever RABBITMQ_LOG_BASE says
    elif key in ("connection_max", "consumer_max_per_channel"):
        settings.set(key, _limit(entry), entry)
    elif key == "vm_memory_high_watermark_paging_ratio":
        settings.set(key, _fraction(entry), entry)
    elif key in ("vm_memory_high_watermark.relative", "vm_memory_high_watermark.absolute"):
        settings.set("vm_memory_high_watermark", _watermark(entry), entry)
    elif key in ("disk_free_limit.relative", "disk_free_limit.absolute"):
        settings.set("disk_free_limit", _watermark(entry), entry)
    elif key == "loopback_users" and entry.value == "none":
        settings.families["loopback_users"] = {}
        settings.set("loopback_users", (), entry)
    elif key.startswith("listeners.tcp."):
        _listener(entry, settings)
    elif key.split(".", 1)[0] in _FAMILIES and "." in key:
        _family(entry, settings)
    elif _tls_entry(entry, settings):
        pass
    elif not re.fullmatch(_ACCEPTED, key):
        settings.warnings.append(f"{entry.where()}: unknown setting {key!r} ignored")
