"""WarrenMQ nodes of an HA pair inside network namespaces (tests/ha/netns.py), each under a supervisor that
starts it again as a standby whenever it exits, as systemd or Docker's restart policy would (a deposed node
exits 1 by design, broker/node_ha.py). Every start, stdout event and exit is recorded with its wall-clock
time in the node's log file, so that tests/ha/checker.py can rebuild who was active when."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.ha.netns import Lab
from tests.ha.nodes import ROOT, HANode

# The supervisor's pause before a restart (systemd's RestartSec): deliberate, not a wait for a condition.
RESTART_DELAY_S = 0.5


class NetnsNode(HANode):
    """A node listening on its namespace's address; AMQP on ``amqp_port`` there."""

    def __init__(self, lab: Lab, name: str, dsn: str, log_dir: Path, lease_s: float) -> None:
        super().__init__(name, dsn, log_dir, lease_s)
        self.lab = lab
        self.address = lab.addresses[name]
        self.amqp_port = 5673  # inside the node's own namespace: no other listener there
        self.supervised = threading.Event()
        self._supervisor: threading.Thread | None = None

    def start(self) -> None:
        env = self._environment()
        args = [sys.executable, "-m", "broker", "serve", "--host", self.address]
        args += ["--port", str(self.amqp_port), "--management-port", str(self.management_port)]
        args += ["--store", self.dsn, "--ha-lease-s", str(self.lease_s)]
        with self.log_path.open("a") as log:
            log.write(f"--- start {time.time():.3f}\n")
            self.process = subprocess.Popen(
                self.lab.exec_args(self.name, args),
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                bufsize=1,
            )
        self.events = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.events), daemon=True).start()

    def _environment(self) -> dict[str, str]:
        # The clients reach it from another host: guest may log in from there, as in RabbitMQ's image.
        config = self.log_path.with_name(f"{self.name}.conf")
        config.write_text("loopback_users.guest = false\n")
        return dict(
            os.environ,
            RABBITMQ_CONFIG_FILE=str(config),
            WARRENMQ_DATA_DIR="none",
            WARRENMQ_PROMETHEUS_PORT="0",
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_NODENAME=f"{self.name}@localhost",
        )

    def supervise(self) -> None:
        """Start now and again after every exit, until ``unsupervise()``."""
        self.supervised.set()
        self.start()
        self._supervisor = threading.Thread(target=self._watch, daemon=True)
        self._supervisor.start()

    def _watch(self) -> None:
        while self.supervised.is_set():
            process = self.process
            assert process is not None
            status = process.wait()
            with self.log_path.open("a") as log:
                log.write(f"--- exit {time.time():.3f} status {status}\n")
            if not self.supervised.is_set():
                return
            time.sleep(RESTART_DELAY_S)
            if self.supervised.is_set():
                self.start()

    def unsupervise(self) -> None:
        self.supervised.clear()
        self.stop()
        if self._supervisor is not None:
            self._supervisor.join(30)

    @property
    def host(self) -> str:
        return f"{self.address}:{self.amqp_port}"
