"""What every resource reads: the running server and broker, the node name, and the open AMQP connections
(read through `live`, the one place that knows the session layer's attribute names)."""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING, Any

from broker.core.broker import Broker
from broker.core.topology.vhost import VirtualHost
from broker.management.stats import live
from broker.management.stats.stats_sampler import DEFAULT_INTERVAL_S, StatsSampler

if TYPE_CHECKING:
    from broker.server.server import Server


def default_node_name() -> str:
    # RabbitMQ's node names are name@host; cluster_name defaults to the node name with the full host.
    return f"warrenmq@{socket.gethostname().split('.')[0] or 'localhost'}"


class ManagementContext:
    # A plain class, not a dataclass: a dataclass's methods are compiled at every start.
    __slots__ = (
        "cluster_name", "collect_statistics_interval_s", "dist_port", "http_host", "http_port", "https_port",
        "node", "os_pid", "prometheus_port", "running_plugins", "sampler", "server", "started_monotonic_s",
    )  # fmt: skip

    def __init__(
        self,
        server: Server,
        node: str | None = None,  # None: default_node_name()
        http_port: int = 0,
        https_port: int = 0,
        dist_port: int = 0,
        http_host: str = "",
        cluster_name: str = "",
        running_plugins: list[str] | None = None,
    ) -> None:
        self.server = server
        self.node = default_node_name() if node is None else node
        self.http_port = http_port
        self.https_port = https_port  # management.ssl.port once bound; 0: no HTTPS listener
        # The CLI channel's port once bound (broker/management/control.py); 0: none.
        self.dist_port = dist_port
        # rabbitmq_prometheus's listener once bound (broker/management/addons.py); 0: none.
        self.prometheus_port = 0
        self.http_host = http_host
        self.started_monotonic_s = time.monotonic()
        self.os_pid = str(os.getpid())
        # The plugins running (started at boot, then switched by rabbitmq-plugins): /api/warrenmq/plugins.
        self.running_plugins: list[str] = [] if running_plugins is None else running_plugins
        if not cluster_name:
            # A cluster_name global parameter (definitions, the store) names the cluster, as in RabbitMQ.
            stored = server.broker.parameters.global_parameters.get("cluster_name")
            cluster_name = stored if isinstance(stored, str) else self.node
        self.cluster_name = cluster_name
        # Statistics sampling interval: rabbitmq.conf collect_statistics_interval (ms), 5 s by default.
        interval_ms = getattr(server.config, "collect_statistics_interval_ms", None)
        self.collect_statistics_interval_s = interval_ms / 1000.0 if interval_ms else DEFAULT_INTERVAL_S
        self.sampler = StatsSampler(server, self.collect_statistics_interval_s)

    @property
    def broker(self) -> Broker:
        return self.server.broker

    def vhost(self, name: str) -> VirtualHost:
        """The vhost of a path, or 404 Object Not Found."""
        vhost = self.broker.vhosts.get(name)
        if vhost is None:
            # errors.py is aiohttp's: imported with the first request, not when the listener starts.
            from broker.management.errors import not_found

            raise not_found()
        return vhost

    def uptime_ms(self) -> int:
        return int((time.monotonic() - self.started_monotonic_s) * 1000)

    def open_connections(self) -> list[Any]:
        return live.open_connections(self.server)

    def open_amqp10_connections(self) -> list[Any]:
        return live.open_amqp10_connections(self.server)
