"""The WarrenMQ image, built from this checkout with podman (docker/build-image.sh), and containers of it run
the way the rabbitmq image's users run theirs: `-p` mappings to host ports, environment, mounted files, named
volumes. No Docker engine runs on these machines; podman does (runc runtime, see .ci/run), and its
Docker-compatible API serves the Testcontainers modules.

Everything here skips, with the reason, when podman is missing or the base image can neither be pulled nor
made; a Dockerfile that does not build fails."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# WARRENMQ_TEST_IMAGE: another tag, for a checkout whose image must not replace a neighbour's warrenmq:test.
IMAGE = os.environ.get("WARRENMQ_TEST_IMAGE", "warrenmq:test")
# A cold build takes minutes (the base image, apt, mypyc); later builds reuse podman's layer cache.
BUILD_TIMEOUT_S = 1800


def podman(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="session")
def image() -> str:
    """The image built from this checkout (podman's layer cache makes rebuilding an unchanged tree quick)."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (.ci/run installs podman, runc and mmdebstrap with apt)")
    info = podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False)
    if info.returncode != 0:
        pytest.skip(f"podman does not work here: {info.stderr.strip()[-500:]}")
    build = subprocess.run(
        ["bash", str(ROOT / "docker/build-image.sh"), IMAGE],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if build.returncode == 2:
        pytest.skip(f"no python:3.11-slim base image for the build: {build.stderr.strip()[-800:]}")
    assert build.returncode == 0, f"podman build failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    return IMAGE


@dataclass
class Container:
    """One `podman run -d` container; ``port(5672)`` is the host port `-p 127.0.0.1::5672` mapped to it."""

    name: str
    volumes: list[str] = field(default_factory=list)

    def port(self, container_port: int) -> int:
        mapped = podman("port", self.name, f"{container_port}/tcp").stdout.strip()
        return int(mapped.rsplit(":", 1)[1])

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def wait_started(self, timeout_s: float = 60.0) -> None:
        """Until the broker printed RabbitMQ's start-up line (what Testcontainers for Node waits for)."""
        deadline = time.monotonic() + timeout_s
        while "Server startup complete" not in self.logs():
            state = self.inspect()["State"]
            if not state["Running"]:
                raise AssertionError(f"container exited {state['ExitCode']}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no start-up line after {timeout_s} s:\n{self.logs()}")
            time.sleep(0.1)

    def inspect(self) -> dict[str, Any]:
        found: list[dict[str, Any]] = json.loads(podman("inspect", self.name).stdout)
        return found[0]

    def exec(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *argv, check=False)

    def stop(self, timeout_s: int = 10) -> int:
        """`podman stop` (SIGTERM, SIGKILL after ``timeout_s``); the container's exit code."""
        podman("stop", "--time", str(timeout_s), self.name, timeout=timeout_s + 30)
        return int(self.inspect()["State"]["ExitCode"])


class Containers:
    """Runs containers of the image and removes them, and the volumes it made, at the end of the test."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.started: list[str] = []
        self.volumes: list[str] = []

    def volume(self) -> str:
        name = f"warrenmq-test-{uuid.uuid4().hex[:12]}"
        podman("volume", "create", name)
        self.volumes.append(name)
        return name

    def run(
        self, *options: str, ports: tuple[int, ...] = (5672,), command: tuple[str, ...] = ()
    ) -> Container:
        name = f"warrenmq-test-{uuid.uuid4().hex[:12]}"
        published = [f"--publish=127.0.0.1::{port}" for port in ports]
        self.started.append(name)
        # Podman logs that it cannot register the healthcheck's systemd timer where systemd does not run;
        # `podman healthcheck run` works all the same.
        podman("run", "--detach", "--name", name, *published, *options, self.image, *command)
        return Container(name)

    def remove(self) -> None:
        for name in self.started:
            podman("rm", "--force", "--volumes", "--time", "0", name, check=False)
        for volume in self.volumes:
            podman("volume", "rm", "--force", volume, check=False)


@pytest.fixture
def containers(image: str) -> Iterator[Containers]:
    made = Containers(image)
    try:
        yield made
    finally:
        made.remove()


@pytest.fixture(scope="session")
def docker_host(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """podman's Docker-compatible API on a unix socket, as DOCKER_HOST names it for Testcontainers."""
    socket_path = tmp_path_factory.mktemp("podman") / "podman.sock"
    url = f"unix://{socket_path}"
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not _answers_ping(socket_path):
            if service.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"podman system service did not start: {service.communicate()[1]}")
            time.sleep(0.1)
        yield url
    finally:
        service.terminate()
        service.wait(timeout=30)


def _answers_ping(socket_path: Path) -> bool:
    """GET /_ping over the socket answers 200 (the Docker API's liveness call)."""
    if not socket_path.exists():
        return False
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(2)
        try:
            sock.connect(str(socket_path))
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: podman\r\n\r\n")
            status_line = sock.recv(64).split(b"\r\n", 1)[0]
        except OSError:
            return False
    return status_line.split()[1:2] == [b"200"]
