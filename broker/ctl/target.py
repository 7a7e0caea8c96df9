"""The broker a CLI talks to, found as RabbitMQ's CLIs find their node: the node name from ``-n`` or
RABBITMQ_NODENAME (default rabbit@<short hostname>; its host part names the machine, resolved locally), then,
for a node of this machine, its ports from the node registry the node wrote at start
(broker/config/node_registry.py, what epmd is to RabbitMQ), whatever ports it chose. Ports set explicitly in
the environment (RABBITMQ_DIST_PORT, RABBITMQ_NODE_PORT, ...) still win; with no live
entry (a node not running, or on another machine) the CLI falls back to them and their defaults (the
distribution port: AMQP port + 20000), from the same environment, rabbitmq-env.conf and configuration files
the server reads (broker/config), so that a healthcheck needs no arguments. What a command reports of the
node (its listeners, paths) it asks the node itself (broker/ctl/node_facts.py)."""

from __future__ import annotations

import argparse
import socket
from dataclasses import dataclass

from broker.config.args import Loaded, add_serve_arguments
from broker.config.layers import environ
from broker.config.node_registry import Entry, lookup
from broker.config.plugins import MANAGEMENT


@dataclass(frozen=True)
class Target:
    node: str
    host: str  # where to connect
    interface: str  # the address the broker binds, as RabbitMQ's listener reports it
    amqp_port: int
    management_port: int | None
    dist_host: str  # where the node's CLI channel listens (loopback for this machine's nodes)
    dist_port: int
    user: str
    password: str
    vhost: str
    loaded: Loaded
    registered: Entry | None = None  # the node's live registry entry, when it has one


def _local(host: str) -> bool:
    short = socket.gethostname().split(".")[0]
    return host in ("localhost", short, socket.gethostname())


def _explicit(loaded: Loaded, name: str) -> bool:
    """Whether the CLI's environment (or command line) names a setting: that wins over the registry. A file
    does not (a node started with other settings than the files' registered what it got), nor port 0
    (ephemeral), which says nothing of the port the node got."""
    source = loaded.resolved[name].source
    return source.startswith(("env ", "--")) and bool(loaded.value(name))


def _connect_host(interface: str) -> str:
    # The wildcard listeners (dual-stack "::" included) take IPv4 loopback clients.
    return "127.0.0.1" if interface in ("0.0.0.0", "", "::", "[::]") else interface.strip("[]")


def find_target(node: str | None) -> Target:
    parser = argparse.ArgumentParser(add_help=False)
    add_serve_arguments(parser)
    loaded = Loaded(parser.parse_args([]), environ())
    value = loaded.value
    name = node or value("node_name")
    if "@" not in name:
        name = f"{name}@{socket.gethostname().split('.')[0]}"
    node_host = name.split("@", 1)[1]
    local = _local(node_host)
    entry = lookup(name) if local else None
    interface = value("host")
    if entry is not None and not _explicit(loaded, "host"):
        interface = entry.host or interface
    host = _connect_host(interface) if local else node_host
    users = value("users")
    user, password = next(iter(users.items())) if users else (value("default_user"), value("default_pass"))
    vhosts = value("vhosts")
    management = value("management_port")
    if value("management_ssl_port") is not None and loaded.resolved["management_port"].source == "default":
        management = -1  # HTTPS alone (rabbit_mgmt_app): no plain HTTP API for the CLI to call
    management_port = management if management > 0 and loaded.plugin_on(MANAGEMENT) else None
    amqp_port, dist_port = value("port"), value("dist_port")
    if entry is not None:
        # The running node's own ports, unless the environment names them.
        if not _explicit(loaded, "port"):
            amqp_port = entry.ports.get("amqp", amqp_port)
        if not _explicit(loaded, "dist_port"):
            dist_port = entry.ports.get("clustering", dist_port)
        if not _explicit(loaded, "management_port"):
            management_port = entry.ports.get("http")
    return Target(
        node=name,
        host=host,
        interface=interface,
        amqp_port=amqp_port,
        management_port=management_port,
        dist_host="127.0.0.1" if local else node_host,
        dist_port=dist_port,
        user=user,
        password=password,
        vhost=vhosts[0] if vhosts else value("default_vhost"),
        loaded=loaded,
        registered=entry,
    )
