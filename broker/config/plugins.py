"""The enabled_plugins file (an Erlang list of atoms, ``[rabbitmq_management,rabbitmq_prometheus].``) and
the plugins WarrenMQ implements.

RabbitMQ reads it from RABBITMQ_ENABLED_PLUGINS_FILE (default /etc/rabbitmq/enabled_plugins) with
file:consult/1; a file that is not one list term stops the node. Without the file WarrenMQ runs every
plugin it implements, as it always has.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from broker.config.sysctl import ConfigFileError

MANAGEMENT = "rabbitmq_management"
PROMETHEUS = "rabbitmq_prometheus"
AUTH_MECHANISM_SSL = "rabbitmq_auth_mechanism_ssl"  # the EXTERNAL mechanism
EVENT_EXCHANGE = "rabbitmq_event_exchange"  # amq.rabbitmq.event (broker.session.event_exchange)
# What WarrenMQ implements, each with the plugins RabbitMQ starts with it (its "N plugins started" counts
# dependencies: rabbitmq_management brings rabbitmq_management_agent and rabbitmq_web_dispatch).
IMPLEMENTED: dict[str, tuple[str, ...]] = {
    MANAGEMENT: ("rabbitmq_management_agent", "rabbitmq_web_dispatch"),
    "rabbitmq_management_agent": (),
    "rabbitmq_web_dispatch": (),
    "rabbitmq_consistent_hash_exchange": (),
    "rabbitmq_delayed_message_exchange": (),
    "rabbitmq_random_exchange": (),
    AUTH_MECHANISM_SSL: (),
    "rabbitmq_recent_history_exchange": (),
    "rabbitmq_sharding": (),  # its x-modulus-hash exchange type only
    EVENT_EXCHANGE: (),
}
# Implemented but only run when an enabled_plugins file lists them (not part of "every plugin" without one).
OPT_IN = frozenset({EVENT_EXCHANGE})
# The exchange types the plugins bring: not declarable unless their plugin is enabled.
EXCHANGE_TYPE_PLUGINS = {
    "x-consistent-hash": "rabbitmq_consistent_hash_exchange",
    "x-delayed-message": "rabbitmq_delayed_message_exchange",
    "x-random": "rabbitmq_random_exchange",
    "x-recent-history": "rabbitmq_recent_history_exchange",
    "x-modulus-hash": "rabbitmq_sharding",
}
# The plugins RabbitMQ 3.10 ships (`rabbitmq-plugins list`): the names rabbitmq-plugins accepts.
CATALOGUE = (
    "rabbitmq_amqp1_0",
    "rabbitmq_auth_backend_cache",
    "rabbitmq_auth_backend_http",
    "rabbitmq_auth_backend_ldap",
    "rabbitmq_auth_backend_oauth2",
    "rabbitmq_auth_mechanism_ssl",
    "rabbitmq_consistent_hash_exchange",
    "rabbitmq_event_exchange",
    "rabbitmq_federation",
    "rabbitmq_federation_management",
    "rabbitmq_jms_topic_exchange",
    "rabbitmq_management",
    "rabbitmq_management_agent",
    "rabbitmq_mqtt",
    "rabbitmq_peer_discovery_aws",
    "rabbitmq_peer_discovery_common",
    "rabbitmq_peer_discovery_consul",
    "rabbitmq_peer_discovery_etcd",
    "rabbitmq_peer_discovery_k8s",
    "rabbitmq_prometheus",
    "rabbitmq_random_exchange",
    "rabbitmq_recent_history_exchange",
    "rabbitmq_sharding",
    "rabbitmq_shovel",
    "rabbitmq_shovel_management",
    "rabbitmq_stomp",
    "rabbitmq_stream",
    "rabbitmq_stream_management",
    "rabbitmq_top",
    "rabbitmq_tracing",
    "rabbitmq_trust_store",
    "rabbitmq_web_dispatch",
    "rabbitmq_web_mqtt",
    "rabbitmq_web_mqtt_examples",
    "rabbitmq_web_stomp",
    "rabbitmq_web_stomp_examples",
)
# Known and carried, not served yet: enabling it switches prometheus.tcp.port on for the endpoint to come.
PENDING = frozenset({PROMETHEUS})


# A pattern string: re compiles it at its first use and caches it, so it never compiles at import.
_ATOM = r"\s*(?:([a-z][A-Za-z0-9_@]*)|'((?:[^'\\]|\\.)*)')\s*"


def _strip_comments(text: str) -> str:
    # Erlang comments run from % to the end of the line (no atom here contains a %).
    return "\n".join(line.split("%", 1)[0] for line in text.splitlines())


def parse_enabled_plugins(text: str, path: str) -> tuple[str, ...]:
    """The atoms of the file's one list term, in order."""
    body = _strip_comments(text).strip()
    if not body:
        return ()  # an empty file enables nothing (rabbit_plugins:read_enabled reads no term as [])
    if not body.endswith("."):
        raise ConfigFileError(path, _last_line(text), "syntax error: the term must end with '.'")
    body = body[:-1].strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise ConfigFileError(path, 1, "expected a list of plugin names, e.g. [rabbitmq_management].")
    inner = body[1:-1]
    if not inner.strip():
        return ()
    plugins: list[str] = []
    for item in inner.split(","):
        match = re.fullmatch(_ATOM, item)
        if match is None:
            line = _line_of(text, item.strip())
            raise ConfigFileError(path, line, f"syntax error: {item.strip()!r} is not a plugin name")
        plugins.append(match.group(1) or match.group(2))
    return tuple(plugins)


def _last_line(text: str) -> int:
    return max(1, len(text.rstrip().splitlines()))


def _line_of(text: str, fragment: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if fragment and fragment in line:
            return number
    return 1


def started_plugins(enabled: tuple[str, ...] | None) -> list[str]:
    """The implemented plugins that run, dependencies included, in RabbitMQ's order (enabled first)."""
    wanted = _defaults()
    chosen = wanted if enabled is None else [name for name in enabled if name in IMPLEMENTED]
    started: list[str] = []
    for name in chosen:
        for plugin in (name, *IMPLEMENTED[name]):
            if plugin not in started:
                started.append(plugin)
    return started


def disabled_exchange_types(enabled: tuple[str, ...] | None) -> frozenset[str]:
    """The plugin exchange types to refuse (none without an enabled_plugins file)."""
    if enabled is None:
        return frozenset()
    return frozenset(kind for kind, plugin in EXCHANGE_TYPE_PLUGINS.items() if plugin not in enabled)


def explicit_plugins(enabled: tuple[str, ...] | None) -> tuple[str, ...]:
    """The explicitly enabled plugins; without a file, the implemented ones that are not dependencies."""
    if enabled is not None:
        return enabled
    return tuple(_defaults())


def _defaults() -> list[str]:
    """What runs without an enabled_plugins file: the implemented plugins but dependencies and opt-ins."""
    return [
        name
        for name in IMPLEMENTED
        if (IMPLEMENTED[name] or name not in _dependencies()) and name not in OPT_IN
    ]


def plugin_enabled(enabled: tuple[str, ...] | None, plugin: str) -> bool:
    """Whether ``plugin`` runs: listed in the file, or without a file one of the defaults."""
    return plugin in _defaults() if enabled is None else plugin in enabled


def implicit_plugins(enabled: tuple[str, ...]) -> list[str]:
    """Dependencies of the enabled plugins that are not enabled themselves."""
    return sorted({dep for name in enabled for dep in IMPLEMENTED.get(name, ())} - set(enabled))


def format_enabled_plugins(plugins: Sequence[str]) -> str:
    """The file as rabbitmq-plugins writes it: ``[a,b].`` and a newline."""
    return f"[{','.join(plugins)}].\n"


def unimplemented(enabled: tuple[str, ...] | None) -> list[str]:
    return [] if enabled is None else [n for n in enabled if n not in IMPLEMENTED and n not in PENDING]


def _dependencies() -> set[str]:
    return {dep for deps in IMPLEMENTED.values() for dep in deps}


def startup_complete_lines(plugins: Sequence[str], now: datetime | None = None) -> list[str]:
    """RabbitMQ's boot-complete log lines (rabbit:start_it/1 -> log_broker_started/1), in its console
    format: Testcontainers' RabbitMQ modules wait for "Server startup complete" on the container's output."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S.%f+00:00")
    prefix = f"{stamp} [info] <0.9.0>"
    return [
        f"{prefix} Server startup complete; {len(plugins)} plugins started.",
        *(f"{prefix}  * {plugin}" for plugin in plugins),
    ]
