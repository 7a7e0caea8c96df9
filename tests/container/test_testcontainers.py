"""Testcontainers' RabbitMQ modules start the WarrenMQ image through podman's Docker-compatible API, with no
change but the image name: Python's RabbitMqContainer (its readiness probe is a pika connection on the
mapped port) and Node's @testcontainers/rabbitmq (it waits for the log line "Server startup complete").

Configuration, not code: DOCKER_HOST names podman's socket; Ryuk (the reaper container) is off, its image
cannot be pulled here and the tests remove their own containers; and because /.dockerenv exists on these
machines, both libraries would otherwise believe they run inside a container and reach the mapped ports
through the bridge network's gateway: TESTCONTAINERS_CONNECTION_MODE=docker_host (Python) and
TESTCONTAINERS_HOST_OVERRIDE (Node) keep them on the loopback address. One podman 4 defect needs the Node
module to map the image's other EXPOSEd ports too (rabbitmq.test.mjs says why; rabbitmq's own image is in the
same case)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from tests.container.conftest import podman

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

NODE_DIR = Path(__file__).parent / "node"


@pytest.fixture
def testcontainers_env(docker_host: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
    monkeypatch.setenv("TESTCONTAINERS_CONNECTION_MODE", "docker_host")
    monkeypatch.setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
    before = set(podman("ps", "--all", "--quiet", "--no-trunc").stdout.split())
    yield
    leftover = set(podman("ps", "--all", "--quiet", "--no-trunc").stdout.split()) - before
    for container_id in leftover:
        podman("rm", "--force", "--volumes", "--time", "0", container_id, check=False)
    assert not leftover, "the module did not remove its container"


def test_python_rabbitmq_module_starts_the_image(image: str, testcontainers_env: None) -> None:
    # Imported here: testcontainers reads its configuration from the environment at import.
    from testcontainers.community.rabbitmq import RabbitMqContainer

    with RabbitMqContainer(image, username="app", password="app-secret", vhost="ci") as rabbitmq:
        connection = pika.BlockingConnection(rabbitmq.get_connection_params())
        assert connection._impl.server_properties["product"] == "RabbitMQ"
        channel = connection.channel()
        channel.confirm_delivery()
        queue = channel.queue_declare("", exclusive=True).method.queue
        channel.basic_publish("", queue, b"from python", pika.BasicProperties(delivery_mode=2))
        _, _, body = channel.basic_get(queue, auto_ack=True)
        assert body == b"from python"
        connection.close()


def _npm_ci() -> None:
    """node_modules from the lockfile, as `npm ci` installs it (skipped when it is already current)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are needed for Testcontainers for Node")
    installed = NODE_DIR / "node_modules/.package-lock.json"
    lockfile = NODE_DIR / "package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lockfile.stat().st_mtime:
        return
    result = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund"],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"npm ci failed (no npm registry?): {result.stderr.strip()[-800:]}")


def _podman4_unmapped_ports(image: str) -> str:
    """The ports the image EXPOSEs that the Node module does not map, when podman is version 4 (see
    rabbitmq.test.mjs); empty for any other version. The module's ports are read from its source."""
    version = podman("version", "--format", "{{.Client.Version}}").stdout.strip()
    if not version.startswith("4."):
        return ""
    module = (NODE_DIR / "node_modules/@testcontainers/rabbitmq/build/rabbitmq-container.js").read_text()
    mapped = {int(port) for port in re.findall(r"const \w+_PORT = (\d+);", module)}
    assert 5672 in mapped
    inspected = podman("image", "inspect", "--format", "{{json .Config.ExposedPorts}}", image)
    exposed = json.loads(inspected.stdout)
    return ",".join(sorted(port.split("/")[0] for port in exposed if int(port.split("/")[0]) not in mapped))


def test_node_rabbitmq_module_starts_the_image(image: str, testcontainers_env: None) -> None:
    _npm_ci()
    unmapped = _podman4_unmapped_ports(image)
    result = subprocess.run(
        ["node", "--test", "--test-reporter=spec", "rabbitmq.test.mjs"],
        cwd=NODE_DIR,
        env={**os.environ, "WARRENMQ_IMAGE": image, "PODMAN4_UNMAPPED_PORTS": unmapped},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pass 1" in result.stdout
