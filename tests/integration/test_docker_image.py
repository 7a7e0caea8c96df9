"""The Docker image's commands, run here as the container would run them (Docker is not available):
the ENTRYPOINT + CMD with the image's ENV, and the HEALTHCHECK command against that broker.

`warrenmq` is `python -m broker` (both are `broker.cli:main`), so the test runs this checkout's code.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pika

from tests.conftest import run_broker_cli

ROOT = Path(__file__).resolve().parents[2]
WARRENMQ = [sys.executable, "-m", "broker"]


def _dockerfile() -> dict[str, object]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    found: dict[str, object] = {"ENV": {}}
    for line in text.splitlines():
        keyword, _, rest = line.strip().partition(" ")
        if keyword == "ENV":
            found["ENV"].update(dict(item.split("=", 1) for item in shlex.split(rest)))  # type: ignore[attr-defined]
        elif keyword in ("ENTRYPOINT", "CMD", "EXPOSE", "USER", "VOLUME", "FROM"):
            found[keyword] = rest.strip()
        elif keyword == "HEALTHCHECK":
            found[keyword] = json.loads(rest[rest.index("CMD") + 3 :])
    return found


def _command(argv: list[str]) -> list[str]:
    assert argv[0] == "warrenmq"
    return WARRENMQ + argv[1:]


def test_image_shape() -> None:
    docker = _dockerfile()
    assert docker["FROM"] == "python:3.11-slim"
    assert docker["USER"] == "warrenmq"
    assert docker["EXPOSE"] == "5672 15672"
    assert json.loads(str(docker["VOLUME"])) == ["/var/lib/warrenmq"]
    assert docker["ENV"]["WARRENMQ_DATA_DIR"] == "/var/lib/warrenmq"  # type: ignore[index]
    assert json.loads(str(docker["ENTRYPOINT"])) == ["warrenmq"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["warrenmq"] == "broker.cli:main"


def test_entrypoint_serves_with_the_image_env_and_the_healthcheck_passes_against_it(tmp_path: Path) -> None:
    docker = _dockerfile()
    env = {**os.environ, **docker["ENV"], "PYTHONPATH": str(ROOT)}  # type: ignore[dict-item]
    # Only the ports and the volume's path differ from the container: parallel test runs cannot all bind
    # 5672/15672, and /var/lib/warrenmq is the container's.
    env.update({"WARRENMQ_HOST": "127.0.0.1", "WARRENMQ_PORT": "0", "WARRENMQ_MANAGEMENT_PORT": "0"})
    env["WARRENMQ_DATA_DIR"] = str(tmp_path / "volume")
    argv = json.loads(str(docker["ENTRYPOINT"])) + json.loads(str(docker["CMD"]))
    server = subprocess.Popen(
        _command(argv), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        ready = json.loads(server.stdout.readline())
        assert ready["event"] == "ready"
        assert ready["recovered"] is not None  # the store under the data directory is in use
        assert (tmp_path / "volume" / "warrenmq.db").exists()
        port = ready["amqp_port"]
        connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/"))
        connection.close()
        health_env = {**env, "WARRENMQ_PORT": str(port)}
        health = subprocess.run(
            _command(docker["HEALTHCHECK"]),  # type: ignore[arg-type]
            env=health_env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert (health.returncode, health.stderr) == (0, "")
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=10)
    assert server.returncode == 0
    # WARRENMQ_LOG_FORMAT=json from the image: structured log lines on stderr.
    assert all(json.loads(line)["event"] for line in stderr.splitlines() if line.strip())


def test_healthcheck_fails_when_nothing_answers_or_login_is_refused(broker_factory: object) -> None:
    closed = run_broker_cli(
        "healthcheck", "--url", "amqp://guest:guest@127.0.0.1:1/", "--timeout", "2", timeout_s=30, cwd=ROOT
    )
    assert closed.returncode == 1
    assert re.search(r"Connection refused", closed.stderr)
    broker = broker_factory()  # type: ignore[operator]
    refused = run_broker_cli(
        "healthcheck", "--url", f"amqp://guest:wrong@127.0.0.1:{broker.port}/", timeout_s=30, cwd=ROOT
    )
    assert refused.returncode == 1
    assert "ACCESS_REFUSED" in refused.stderr
