"""The node's listeners as RabbitMQ lists them (rabbit_networking:active_listeners): in /api/overview's
``listeners`` (``ip_address``, ``socket_opts``) and, for the CLIs over their channel, in the shape of
RabbitMQ's CLI (RabbitMQ.CLI.Core.Listeners: ``interface`` with IPv6 in brackets, and ``purpose``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.management.context import ManagementContext

# RabbitMQ.CLI.Core.Listeners.protocol_label for the protocols WarrenMQ listens with.
PURPOSES = {
    "amqp": "AMQP 0-9-1 and AMQP 1.0",
    "amqp/ssl": "AMQP 0-9-1 and AMQP 1.0 over TLS",
    "clustering": "inter-node and CLI tool communication",
    "http": "HTTP API",
    "https": "HTTP API over TLS (HTTPS)",
    "http/prometheus": "Prometheus exporter API over HTTP",
}
# The order RabbitMQ 3.10's `rabbitmq-diagnostics listeners` and `status` print them in (checked with the
# management and prometheus plugins on): the plugins' HTTP listeners, then distribution, then AMQP.
_CLI_ORDER = ("http", "https", "http/prometheus", "clustering", "amqp", "amqp/ssl")
_COWBOY_OPTS = {"sendfile": False}  # what rabbitmq_web_dispatch reports of its cowboy listeners


def active(context: ManagementContext) -> list[tuple[str, str, int]]:
    """(protocol, interface, port) of every bound listener, in /api/overview's order."""
    config = context.server.config
    http_ip = context.http_host or config.host
    found = [
        ("amqp", config.host, context.server.port),
        ("amqp/ssl", config.host, context.server.ssl_port),
        # Erlang distribution, RabbitMQ's "clustering" listener: WarrenMQ's CLI channel, on loopback.
        ("clustering", "127.0.0.1", context.dist_port),
        ("http", http_ip, context.http_port),
        ("https", http_ip, context.https_port),
        ("http/prometheus", config.host, context.prometheus_port),
    ]
    # Only the listeners that are on (HTTPS alone when management.ssl.* is set without management.tcp.*).
    return [(protocol, ip, port) for protocol, ip, port in found if port]


def _socket_opts(protocol: str, port: int) -> Any:
    if protocol == "clustering":
        return []  # RabbitMQ's distribution listener has an empty list of socket options
    if protocol == "http/prometheus":
        return {"cowboy_opts": _COWBOY_OPTS, "port": port, "protocol": protocol}
    if protocol in ("http", "https"):
        # RabbitMQ adds "ip" when management.tcp.ip is set, a setting WarrenMQ does not have.
        return {"cowboy_opts": _COWBOY_OPTS, "port": port}
    return {}


def overview_listeners(context: ManagementContext) -> list[dict[str, Any]]:
    return [
        {
            "ip_address": ip,
            "node": context.node,
            "port": port,
            "protocol": protocol,
            "socket_opts": _socket_opts(protocol, port),
        }
        for protocol, ip, port in active(context)
    ]


def interface(ip: str) -> str:
    """An address as RabbitMQ's CLI prints a listener's: IPv6 in brackets (``[::]``)."""
    return f"[{ip}]" if ":" in ip and not ip.startswith("[") else ip


def cli_listeners(context: ManagementContext) -> list[dict[str, Any]]:
    """The listeners in RabbitMQ's CLI shape and order."""
    rows = sorted(active(context), key=lambda item: _CLI_ORDER.index(item[0]))
    return [
        {
            "interface": interface(ip),
            "node": context.node,
            "port": port,
            "protocol": protocol,
            "purpose": PURPOSES[protocol],
        }
        for protocol, ip, port in rows
    ]
