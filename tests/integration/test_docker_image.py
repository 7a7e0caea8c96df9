"""The Docker image's set-up without a container runtime (tests/container builds and runs the real image with
podman): the image's files (docker/rootfs, what `COPY docker/rootfs/ /` puts in it) in a temporary root, the
Dockerfile's ENV, its ENTRYPOINT + CMD, and its HEALTHCHECK against that broker. The console scripts are the
ones pyproject.toml declares, as shims that run this checkout's code. Quick, and runs where podman cannot."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pika

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
WARRENMQ = [sys.executable, "-m", "broker"]


def _dockerfile() -> dict[str, Any]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    found: dict[str, Any] = {"ENV": {}, "COPY": []}
    for line in text.split("FROM python:3.11-slim\n", 1)[1].splitlines():
        keyword, _, rest = line.strip().partition(" ")
        if keyword == "ENV":
            found["ENV"].update(dict(item.split("=", 1) for item in shlex.split(rest)))
        elif keyword == "COPY":
            found["COPY"].append(rest.strip())
        elif keyword in ("ENTRYPOINT", "CMD", "EXPOSE", "USER", "VOLUME"):
            found[keyword] = rest.strip()
        elif keyword == "HEALTHCHECK":
            found[keyword] = json.loads(rest[rest.index("CMD") + 3 :])
    return found


def _image_root(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """docker/rootfs copied to a temporary root, console-script shims on PATH, and the image's ENV with its
    absolute paths moved under that root (WARRENMQ_SYS_PREFIX moves /etc/rabbitmq)."""
    root = tmp_path / "root"
    shutil.copytree(ROOT / "docker/rootfs", root)
    bin_dir = root / "usr/local/bin"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name, target in scripts.items():
        module, function = target.split(":")
        code = f"import sys; from {module} import {function}; sys.exit({function}())"
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(code)} "$@"\n')
        shim.chmod(0o755)
    env = dict(_dockerfile()["ENV"])
    for key, value in env.items():
        if value.startswith("/"):
            env[key] = str(root) + value
            Path(env[key]).mkdir(parents=True, exist_ok=True)
    env.update(
        {"WARRENMQ_SYS_PREFIX": str(root), "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    )
    return root, env


def test_image_shape_mirrors_the_rabbitmq_image() -> None:
    docker = _dockerfile()
    assert docker["USER"] == "rabbitmq"
    assert docker["EXPOSE"].split() == ["5671", "5672", "15672", "15692"]
    assert json.loads(docker["VOLUME"]) == ["/var/lib/rabbitmq"]
    assert docker["ENV"]["WARRENMQ_DATA_DIR"] == "/var/lib/rabbitmq"
    # Listener variables in ENV would override a mounted rabbitmq.conf (environment > file).
    assert not {"WARRENMQ_PORT", "WARRENMQ_HOST", "WARRENMQ_MANAGEMENT_PORT"} & set(docker["ENV"])
    assert "docker/rootfs/ /" in docker["COPY"]
    assert json.loads(docker["ENTRYPOINT"]) == ["docker-entrypoint.sh"]
    assert json.loads(docker["CMD"]) == ["rabbitmq-server"]
    assert docker["HEALTHCHECK"] == ["rabbitmq-diagnostics", "-q", "ping"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert {"warrenmq", "rabbitmq-server", "rabbitmq-diagnostics", "rabbitmqctl"} <= set(scripts)
    compose = (ROOT / "docker/compose.yaml").read_text()
    assert '["CMD", "rabbitmq-diagnostics", "-q", "ping"]' in compose
    assert ":/var/lib/rabbitmq" in compose


def test_entrypoint_serves_with_the_image_env_and_the_healthcheck_passes(tmp_path: Path) -> None:
    root, env = _image_root(tmp_path)
    # What a compose file sets; the ports only because 5672/15672/15692 may be taken on a shared test machine.
    env.update(
        {
            "RABBITMQ_DEFAULT_USER": "app",
            "RABBITMQ_DEFAULT_PASS": "app-secret",
            "RABBITMQ_NODE_PORT": str(free_port()),
            "WARRENMQ_MANAGEMENT_PORT": str(free_port()),
            "WARRENMQ_PROMETHEUS_PORT": str(free_port()),
        }
    )
    docker = _dockerfile()
    argv = json.loads(docker["ENTRYPOINT"]) + json.loads(docker["CMD"])
    entrypoint = root / "usr/local/bin" / argv[0]
    server = subprocess.Popen(
        [str(entrypoint), *argv[1:]],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready = json.loads(server.stdout.readline())
        # enabled_plugins from the image: management (with its two dependencies); prometheus is carried.
        assert server.stdout.readline().rstrip().endswith("Server startup complete; 3 plugins started.")
        assert ready["recovered"] is not None  # the store under the data volume is in use
        assert (root / "var/lib/rabbitmq/warrenmq.db").exists()
        assert ready["management_port"] == int(env["WARRENMQ_MANAGEMENT_PORT"])
        params = pika.ConnectionParameters(
            "127.0.0.1",
            ready["amqp_port"],
            "/",
            pika.PlainCredentials("app", "app-secret"),
            connection_attempts=1,
        )
        pika.BlockingConnection(params).close()
        health = subprocess.run(
            docker["HEALTHCHECK"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert (health.returncode, health.stdout, health.stderr) == (0, "Ping succeeded\n", "")
    finally:
        server.terminate()
        server.communicate(timeout=10)
    assert server.returncode == 0
    # Nothing serves any more: the same healthcheck now fails with RabbitMQ's exit code.
    assert (
        subprocess.run(
            docker["HEALTHCHECK"], env=env, capture_output=True, timeout=30, check=False
        ).returncode
        == 69
    )


def test_entrypoint_runs_other_commands_in_the_image_configuration(tmp_path: Path) -> None:
    root, env = _image_root(tmp_path)
    entrypoint = str(root / "usr/local/bin/docker-entrypoint.sh")
    shown = subprocess.run(
        [entrypoint, "warrenmq", "config", "show", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    config = json.loads(shown.stdout)
    assert config["config_files"] == [f"{root}/etc/rabbitmq/conf.d/10-defaults.conf"]
    assert config["settings"]["loopback_users"]["value"] == []
    assert config["plugins"]["enabled"] == ["rabbitmq_management", "rabbitmq_prometheus"]
    assert config["settings"]["data_dir"] == {
        "value": f"{root}/var/lib/rabbitmq",
        "source": "env WARRENMQ_DATA_DIR",
    }
    # `docker run warrenmq --frame-max 100`: arguments starting with "-" go to rabbitmq-server.
    refused = subprocess.run(
        [entrypoint, "--frame-max", "100"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert refused.returncode == 1
    assert "--frame-max must be at least 4096 (--frame-max)" in refused.stderr


def test_warrenmq_healthcheck_still_fails_when_nothing_answers_or_login_is_refused(
    broker_factory: Any,
) -> None:
    closed = subprocess.run(
        [*WARRENMQ, "healthcheck", "--url", "amqp://guest:guest@127.0.0.1:1/", "--timeout", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert closed.returncode == 1
    assert re.search(r"Connection refused", closed.stderr)
    broker = broker_factory()
    refused = subprocess.run(
        [*WARRENMQ, "healthcheck", "--url", f"amqp://guest:wrong@127.0.0.1:{broker.port}/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert refused.returncode == 1
    assert "ACCESS_REFUSED" in refused.stderr
