"""Erlang application environment (``advanced.config``, the ``-rabbit tcp_listeners [5673]`` arguments of
RABBITMQ_SERVER_START_ARGS) turned into the rabbitmq.conf entries WarrenMQ applies: each known
``{App, Key}`` becomes the rabbitmq.conf key RabbitMQ's schema maps onto it (``rabbit.tcp_listeners`` is
``listeners.tcp.*``), so both go through one set of rules (broker/config/rabbitmq_conf.py). Keys WarrenMQ
does not apply are returned as warnings, never refused: a file written for RabbitMQ must not stop the node.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.config.erlang_terms import Atom, TermError, parse_app_args, parse_term
from broker.config.rabbitmq_conf import FileSettings, apply_entry
from broker.config.sysctl import ConfigFileError, Entry

START_ARGS = "RABBITMQ_SERVER_START_ARGS"
# rabbit's keys that rabbitmq.conf spells the same (rabbit.schema: heartbeat, frame_max, ...).
_SAME_NAME = (
    "heartbeat",
    "frame_max",
    "channel_max",
    "session_max_per_connection",
    "consumer_timeout",
    "max_message_size",
    "collect_statistics_interval",
    "default_user",
    "default_pass",
    "default_vhost",
    "cluster_name",
    "connection_max",
)


def _listener(value: Any) -> str:
    """A tcp_listeners element: ``5672``, ``{"127.0.0.1", 5672}`` or ``{"::1", 5672}``."""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int):
        host = value[0]
        if isinstance(host, tuple):  # {127,0,0,1}: an inet address tuple
            parts = [str(part) for part in host] if len(host) == 4 else [f"{part:x}" for part in host]
            host = (".", ":")[len(host) != 4].join(parts)
        return f"[{host}]:{value[1]}" if ":" in str(host) else f"{host}:{value[1]}"
    raise ValueError(f"a listener is PORT or {{IP, PORT}}, got {value!r}")


def _listeners(kind: str) -> Callable[[Any], list[tuple[str, str]]]:
    def entries(value: Any) -> list[tuple[str, str]]:
        if not isinstance(value, list):
            raise ValueError(f"expected a list of listeners, got {value!r}")
        return [(f"listeners.{kind}.{index}", _listener(item)) for index, item in enumerate(value, 1)]

    return entries


def _port_of(prefix: str) -> Callable[[Any], list[tuple[str, str]]]:
    """rabbitmq_management listener / rabbitmq_prometheus tcp_config: a proplist with ``{port, N}``."""

    def entries(value: Any) -> list[tuple[str, str]]:
        props = dict(item for item in value if isinstance(item, tuple) and len(item) == 2)
        if not isinstance(props.get("port"), int):
            raise ValueError(f"expected [{{port, N}}], got {value!r}")
        return [(f"{prefix}.tcp.port", str(props["port"]))]

    return entries


def _loopback_users(value: Any) -> list[tuple[str, str]]:
    if value == []:
        return [("loopback_users", "none")]
    return [(f"loopback_users.{name}", "true") for name in value]


def _plain(key: str) -> Callable[[Any], list[tuple[str, str]]]:
    def entries(value: Any) -> list[tuple[str, str]]:
        if isinstance(value, Atom) and value == "infinity":
            return [(key, "infinity")]
        if not isinstance(value, int | str):
            raise ValueError(f"expected a number or a string, got {value!r}")
        return [(key, str(value))]

    return entries


RULES: dict[tuple[str, str], Callable[[Any], list[tuple[str, str]]]] = {
    ("rabbit", "tcp_listeners"): _listeners("tcp"),
    ("rabbit", "ssl_listeners"): _listeners("ssl"),
    ("rabbit", "loopback_users"): _loopback_users,
    ("rabbitmq_management", "listener"): _port_of("management"),
    ("rabbitmq_prometheus", "tcp_config"): _port_of("prometheus"),
    **{("rabbit", key): _plain(key) for key in _SAME_NAME},
}


def apply_app_env(app: str, key: str, value: Any, where: str, settings: FileSettings) -> None:
    rule = RULES.get((app, key))
    if rule is None:
        settings.warnings.append(f"{where}: {app}.{key} is not applied by WarrenMQ; ignored")
        return
    try:
        entries = rule(value)
    except ValueError as error:
        raise ConfigFileError(where, 0, f"{app}.{key}: {error}") from None
    for conf_key, conf_value in entries:
        apply_entry(Entry(conf_key, conf_value, where, 0), settings)


def apply_advanced_config(path: str, settings: FileSettings) -> None:
    """advanced.config: ``[{App, [{Key, Value}, ...]}, ...].``"""
    try:
        terms = parse_term(Path(path).read_text())
    except OSError as error:
        raise ConfigFileError(path, 0, f"cannot read: {error.strerror}") from None
    except TermError as error:
        raise ConfigFileError(path, 0, f"not an Erlang term: {error}") from None
    if not isinstance(terms, list):
        raise ConfigFileError(path, 0, "expected a list of {App, [{Key, Value}]} tuples")
    for app_entry in terms:
        if not (isinstance(app_entry, tuple) and len(app_entry) == 2 and isinstance(app_entry[1], list)):
            raise ConfigFileError(path, 0, f"expected {{App, [{{Key, Value}}]}}, got {app_entry!r}")
        for item in app_entry[1]:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise ConfigFileError(path, 0, f"{app_entry[0]}: expected {{Key, Value}}, got {item!r}")
            apply_app_env(str(app_entry[0]), str(item[0]), item[1], path, settings)


def apply_start_args(text: str, settings: FileSettings) -> None:
    """RABBITMQ_SERVER_START_ARGS: erl's ``-App Key Value`` arguments."""
    try:
        triples = parse_app_args(text)
    except TermError as error:
        raise ConfigFileError(START_ARGS, 0, str(error)) from None
    for app, key, value in triples:
        apply_app_env(app, key, value, START_ARGS, settings)
