"""What every resource reads: the running server and broker, the node name, and the open AMQP connections
(read through `live`, the one place that knows the session layer's attribute names)."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
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


@dataclass
class ManagementContext:
    server: Server
    node: str = field(default_factory=default_node_name)
    http_port: int = 0
    https_port: int = 0  # management.ssl.port once bound; 0: no HTTPS listener
    dist_port: int = 0  # the CLI channel's port once bound (broker/management/control.py); 0: none
    http_host: str = ""
    started_monotonic_s: float = field(default_factory=time.monotonic)
    cluster_name: str = ""
    os_pid: str = field(default_factory=lambda: str(os.getpid()))
    # The plugins running (started at boot, then switched by rabbitmq-plugins): /api/warrenmq/plugins.
    running_plugins: list[str] = field(default_factory=list)
    # Statistics sampling interval: rabbitmq.conf collect_statistics_interval (ms), 5 s by default.
    collect_statistics_interval_s: float = DEFAULT_INTERVAL_S
    sampler: StatsSampler = field(init=False)

    def __post_init__(self) -> None:
        if not self.cluster_name:
            # A cluster_name global parameter (definitions, the store) names the cluster, as in RabbitMQ.
            stored = self.server.broker.parameters.global_parameters.get("cluster_name")
            self.cluster_name = stored if isinstance(stored, str) else self.node
        interval_ms = getattr(self.server.config, "collect_statistics_interval_ms", None)
        if interval_ms:
            self.collect_statistics_interval_s = interval_ms / 1000.0
        self.sampler = StatsSampler(self.server, self.collect_statistics_interval_s)

    @property
    def broker(self) -> Broker:
        return self.server.broker

    def vhost(self, name: str) -> VirtualHost:
        """The vhost of a path, or 404 Object Not Found."""
        vhost = self.broker.vhosts.get(name)
        if vhost is None:
            # errors.py is aiohttp's: imported with the first request, not when the listener starts (#29).
            from broker.management.errors import not_found

            raise not_found()
        return vhost

    def uptime_ms(self) -> int:
        return int((time.monotonic() - self.started_monotonic_s) * 1000)

    def open_connections(self) -> list[Any]:
        return live.open_connections(self.server)
