"""The broker a CLI talks to, found as RabbitMQ's CLIs find their node: the node name from ``-n`` or
RABBITMQ_NODENAME (default rabbit@<short hostname>; its host part names the machine, resolved locally), the
distribution port from RABBITMQ_DIST_PORT (default AMQP port + 20000: RabbitMQ's CLIs ask epmd, which
WarrenMQ does not run), the other ports and the default user from the same environment, rabbitmq-env.conf
and configuration files the server reads (broker/config), so that a healthcheck needs no arguments."""

from __future__ import annotations

import argparse
import socket
from dataclasses import dataclass
from typing import Any

from broker.config.args import Loaded, add_serve_arguments
from broker.config.layers import environ
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

    def listeners(self) -> list[dict[str, Any]]:
        """The listeners the configuration opens, in RabbitMQ's listener shape."""
        # RabbitMQ lists its distribution listener first; WarrenMQ's CLI channel binds loopback.
        found = (
            [
                {
                    **self._listener(self.dist_port, "clustering", "inter-node and CLI tool communication"),
                    "interface": "127.0.0.1",
                }
            ]
            if self.dist_port
            else []
        )
        found.append(self._listener(self.amqp_port, "amqp", "AMQP 0-9-1 and AMQP 1.0"))
        if self.management_port:
            found.append(self._listener(self.management_port, "http", "HTTP API"))
        return found

    def _listener(self, port: int, protocol: str, purpose: str) -> dict[str, Any]:
        return {
            "interface": self.interface,
            "node": self.node,
            "port": port,
            "protocol": protocol,
            "purpose": purpose,
        }


def _local(host: str) -> bool:
    short = socket.gethostname().split(".")[0]
    return host in ("localhost", short, socket.gethostname())


def find_target(node: str | None) -> Target:
    parser = argparse.ArgumentParser(add_help=False)
    add_serve_arguments(parser)
    loaded = Loaded(parser.parse_args([]), environ())
    value = loaded.value
    name = node or value("node_name")
    if "@" not in name:
        name = f"{name}@{socket.gethostname().split('.')[0]}"
    node_host = name.split("@", 1)[1]
    interface = value("host")
    if not _local(node_host):
        host = node_host
    else:
        # The wildcard listeners (dual-stack "::" included) take IPv4 loopback clients.
        host = "127.0.0.1" if interface in ("0.0.0.0", "", "::", "[::]") else interface.strip("[]")
    users = value("users")
    user, password = next(iter(users.items())) if users else (value("default_user"), value("default_pass"))
    vhosts = value("vhosts")
    management = value("management_port")
    if value("management_ssl_port") is not None and loaded.resolved["management_port"].source == "default":
        management = -1  # HTTPS alone (rabbit_mgmt_app): no plain HTTP API for the CLI to call
    return Target(
        node=name,
        host=host,
        interface=interface,
        amqp_port=value("port"),
        management_port=management if management > 0 and loaded.plugin_on(MANAGEMENT) else None,
        dist_host="127.0.0.1" if _local(node_host) else node_host,
        dist_port=value("dist_port"),
        user=user,
        password=password,
        vhost=vhosts[0] if vhosts else value("default_vhost"),
        loaded=loaded,
    )
