"""A private RabbitMQ node (tests/compat's) with the management plugin enabled on its own HTTP port."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.compat.rabbitmq_node import RabbitMQNode
from tests.ports import free_port


@dataclass
class ManagementNode(RabbitMQNode):
    http_port: int = field(default_factory=free_port)

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def _pick_ports(self) -> None:
        super()._pick_ports()
        self.http_port = free_port()

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        env["RABBITMQ_ENABLED_PLUGINS"] = "rabbitmq_management"
        env["RABBITMQ_CONFIG_FILE"] = str(self.base_dir / "management")
        return env

    def _launch(self, timeout_s: float) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "management.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {self.http_port}\n"
        )
        super()._launch(timeout_s)
