"""A `warrenmq serve` process configured by a rabbitmq.conf, its log captured, and its management API at hand:
what the alarm, limit and TLS tests start their brokers with."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    process: subprocess.Popen[str]
    env: dict[str, str]
    port: int
    management_port: int
    log_path: Path
    ready: dict[str, Any]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def http(self, path: str, user: str = "guest", password: str = "guest") -> tuple[int, Any]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.management_port}{path}")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def serve(
    tmp_path: Path, conf: str, env: dict[str, str] | None = None, management_tcp: bool = True
) -> Served:
    """Start `python -m broker serve` with no flags: listeners and limits come from ``conf`` (rabbitmq.conf
    syntax), to which the AMQP and (``management_tcp``) management listeners on free ports are added."""
    port, management_port = free_port(), free_port()
    conf_path = tmp_path / "rabbitmq.conf"
    management = f"management.tcp.port = {management_port}\n" if management_tcp else ""
    conf_path.write_text(f"listeners.tcp.default = 127.0.0.1:{port}\n{management}" + conf)
    inherited = {
        key: value for key, value in os.environ.items() if management_tcp or key != "WARRENMQ_MANAGEMENT_PORT"
    }
    full_env = {
        **inherited,
        "RABBITMQ_CONFIG_FILE": str(conf_path),
        "RABBITMQ_NODENAME": "rabbit@localhost",
        "WARRENMQ_LOG_FORMAT": "json",
        **(env or {}),
    }
    log_path = tmp_path / "broker.log"
    with log_path.open("w") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "broker", "serve"],
            cwd=ROOT,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait(timeout=10)
        raise RuntimeError(f"broker exited with {process.returncode}: {log_path.read_text()}")
    ready = json.loads(line)
    return Served(process, full_env, int(ready["amqp_port"]), management_port, log_path, ready)


def diagnostics(served: Served, *argv: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from broker.ctl.diagnostics import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        env=served.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
