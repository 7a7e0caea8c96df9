"""WarrenMQ processes of a high-availability pair on one PostgreSQL store, for the HA suites: each keeps
its ports across restarts (so a client's host list stays valid), its stdout events (the ``standby`` and
``ready`` JSON lines) in a queue, and its log in a file."""

from __future__ import annotations

import base64
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pika

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


class HANode:
    """One node: ``start()`` it (standby until elected), then wait for its events."""

    def __init__(self, name: str, dsn: str, log_dir: Path, lease_s: float) -> None:
        self.name = name
        self.dsn = dsn
        self.lease_s = lease_s
        self.amqp_port = free_port()
        self.management_port = free_port()
        self.dist_port = free_port()
        self.log_path = log_dir / f"{name}.log"
        self.process: subprocess.Popen[str] | None = None
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()

    def start(self) -> None:
        env = dict(
            os.environ,
            WARRENMQ_DATA_DIR="none",
            WARRENMQ_PROMETHEUS_PORT="0",
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_NODENAME=f"{self.name}@localhost",
        )
        args = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1"]
        args += ["--port", str(self.amqp_port), "--management-port", str(self.management_port)]
        args += ["--store", self.dsn, "--ha-lease-s", str(self.lease_s)]
        with self.log_path.open("a") as log:
            log.write(f"--- start {time.time():.3f}\n")
            self.process = subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1
            )
        self.events = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.events), daemon=True).start()

    @staticmethod
    def _read(process: subprocess.Popen[str], events: queue.Queue[dict[str, Any]]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("{"):
                events.put(json.loads(line))
        events.put({"event": "exited"})

    def wait_event(self, kind: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """The next stdout event of ``kind`` ('standby', 'ready'); AssertionError if the node exits first."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                event = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"{self.name}: no {kind!r} event in {timeout_s} s") from None
            if event["event"] == kind:
                return event
            if event["event"] == "exited":
                raise AssertionError(f"{self.name} exited before {kind!r}: see {self.log_path}")

    def http(
        self, path: str, timeout_s: float = 2.0, method: str = "GET", body: Any = None
    ) -> tuple[int, Any]:
        """A request to the management API as guest: (status, JSON body); (0, None) when nothing answers."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.management_port}{path}", data=data, method=method
        )
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")
        except OSError:
            return 0, None

    def in_service(self) -> bool:
        return self.http("/api/health/checks/is-in-service")[0] == 200

    def parameters(self) -> pika.ConnectionParameters:
        return pika.ConnectionParameters("127.0.0.1", self.amqp_port, connection_attempts=1, socket_timeout=2)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait()

    def wait(self, timeout_s: float = 30.0) -> int:
        assert self.process is not None
        return self.process.wait(timeout_s)

    def stop(self) -> None:
        if self.running:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text()
