"""Testcontainers' RabbitMQ modules start the WarrenMQ image through podman's Docker-compatible API, with no
change but the image name, each waiting with its own strategy and passing a publish/consume and a management
API call:

- Java's RabbitMQContainer (org.testcontainers:rabbitmq, the image declared a compatible substitute for
  "rabbitmq"): waits for the log line "Server startup complete"; withRabbitMQConfig (RABBITMQ_CONFIG_FILE) and
  the set-up commands it runs in the container (`rabbitmqadmin declare ...`);
- Python's RabbitMqContainer: its readiness probe is a pika connection on the mapped port;
- Node's @testcontainers/rabbitmq: the log line;
- Go's modules/rabbitmq: the log line, and its own rabbitmq.conf named by RABBITMQ_CONFIG_FILE.

The Java, Go and Node programs are built from their lock files into the suites' build cache
(toolchains.py); the docs' snippets (docs/drop-in.md, "Testcontainers") are the parts of them between the
snippet markers.

Configuration, not code: DOCKER_HOST names podman's socket; Ryuk (the reaper container) is off, its image
cannot be pulled here and the tests remove their own containers, and so are Java's start-up checks (they run
an alpine container); and because /.dockerenv exists on these machines, the libraries would otherwise believe
they run inside a container and reach the mapped ports through the bridge network's gateway:
TESTCONTAINERS_CONNECTION_MODE=docker_host (Python) and TESTCONTAINERS_HOST_OVERRIDE (Java, Node, Go) keep
them on the loopback address. One podman 4 defect needs the Node module to map the image's other EXPOSEd
ports too (rabbitmq.test.mjs says why; rabbitmq's own image is in the same case)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
import requests

from tests.container import toolchains
from tests.container.conftest import podman
from tests.docs.blocks import docs_snippet
from tests.jvm import SHORT_RUN_JVM_OPTIONS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

PAGE = "docs/drop-in.md"
# The docs' snippet id, the program it comes from, and the comment that opens a line in that language.
SNIPPETS = {
    "testcontainers-java": (
        toolchains.JAVA_DIR / "src/main/java/io/warrenmq/tests/TestcontainersJava.java",
        "//",
    ),
    "testcontainers-python": (Path(__file__), "#"),
    "testcontainers-node": (toolchains.NODE_DIR / "rabbitmq.test.mjs", "//"),
    "testcontainers-go": (toolchains.GO_DIR / "rabbitmq_test.go", "//"),
}
RUN_TIMEOUT_S = 300


def program_snippet(path: Path, comment: str, snippet_id: str) -> str:
    """The lines of ``path`` between ``<comment> snippet: <id>`` and ``<comment> end snippet``, dedented."""
    lines = path.read_text(encoding="utf-8").split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() == f"{comment} snippet: {snippet_id}"]
    assert len(starts) == 1, f"{path}: one '{comment} snippet: {snippet_id}' line"
    end = next(i for i in range(starts[0], len(lines)) if lines[i].strip() == f"{comment} end snippet")
    body = lines[starts[0] + 1 : end]
    indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
    return "".join(line[indent:] + "\n" for line in body)


@pytest.mark.parametrize("snippet_id", sorted(SNIPPETS))
def test_the_drop_in_page_shows_the_programs_run_here(snippet_id: str) -> None:
    path, comment = SNIPPETS[snippet_id]
    assert docs_snippet(PAGE, snippet_id) == program_snippet(path, comment, snippet_id)


def _testcontainers_containers() -> set[str]:
    """The containers a Testcontainers library made (all four label theirs org.testcontainers=true), not
    those that tests of the image run beside these on another pytest-xdist worker."""
    listed = podman("ps", "--all", "--quiet", "--no-trunc", "--filter", "label=org.testcontainers=true")
    return set(listed.stdout.split())


@pytest.fixture
def testcontainers_env(docker_host: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
    monkeypatch.setenv("TESTCONTAINERS_CHECKS_DISABLE", "true")
    monkeypatch.setenv("TESTCONTAINERS_CONNECTION_MODE", "docker_host")
    monkeypatch.setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
    before = _testcontainers_containers()
    yield
    leftover = _testcontainers_containers() - before
    for container_id in leftover:
        podman("rm", "--force", "--volumes", "--time", "0", container_id, check=False)
    assert not leftover, "the module did not remove its container"


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_java_rabbitmq_module_starts_the_image(image: str, testcontainers_env: None) -> None:
    classpath = toolchains.java_classpath()
    home = toolchains.CACHE / "java-home"  # Testcontainers writes ~/.testcontainers.properties
    home.mkdir(parents=True, exist_ok=True)
    java = ["java", *SHORT_RUN_JVM_OPTIONS.split(), f"-Duser.home={home}"]
    result = _run(
        [*java, "-cp", classpath, "io.warrenmq.tests.TestcontainersJava"],
        toolchains.JAVA_DIR,
        {"WARRENMQ_IMAGE": image},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-8000:]
    assert "testcontainers-java: publish, consume and management API passed" in result.stdout
    # The set-up commands only log a failure; none may have failed.
    assert "Could not execute command" not in result.stderr, result.stderr[-8000:]


def test_python_rabbitmq_module_starts_the_image(image: str, testcontainers_env: None) -> None:
    # Imported here: testcontainers reads its configuration from the environment at import.
    from testcontainers.community.rabbitmq import RabbitMqContainer

    # snippet: testcontainers-python
    rabbitmq = RabbitMqContainer(image, username="app", password="app-secret", vhost="ci")
    with rabbitmq.with_exposed_ports(15672):
        connection = pika.BlockingConnection(rabbitmq.get_connection_params())
        channel = connection.channel()
        channel.confirm_delivery()
        queue = channel.queue_declare("", exclusive=True).method.queue
        channel.basic_publish("", queue, b"from python", pika.BasicProperties(delivery_mode=2))
        _, _, body = channel.basic_get(queue, auto_ack=True)
        assert body == b"from python"
        connection.close()

        api = f"http://{rabbitmq.get_container_host_ip()}:{rabbitmq.get_exposed_port(15672)}/api"
        vhost = requests.get(f"{api}/vhosts/ci", auth=("app", "app-secret"), timeout=10)
        assert vhost.json()["name"] == "ci"
    # end snippet


def _podman4_unmapped_ports(image: str) -> str:
    """The ports the image EXPOSEs that the Node module does not map, when podman is version 4 (see
    rabbitmq.test.mjs); empty for any other version. The module's ports are read from its source."""
    version = podman("version", "--format", "{{.Client.Version}}").stdout.strip()
    if not version.startswith("4."):
        return ""
    module = (
        toolchains.NODE_DIR / "node_modules/@testcontainers/rabbitmq/build/rabbitmq-container.js"
    ).read_text()
    mapped = {int(port) for port in re.findall(r"const \w+_PORT = (\d+);", module)}
    assert 5672 in mapped
    inspected = podman("image", "inspect", "--format", "{{json .Config.ExposedPorts}}", image)
    exposed = json.loads(inspected.stdout)
    return ",".join(sorted(port.split("/")[0] for port in exposed if int(port.split("/")[0]) not in mapped))


def test_node_rabbitmq_module_starts_the_image(image: str, testcontainers_env: None) -> None:
    toolchains.npm_ci()
    unmapped = _podman4_unmapped_ports(image)
    result = _run(
        ["node", "--test", "--test-reporter=spec", "rabbitmq.test.mjs"],
        toolchains.NODE_DIR,
        {"WARRENMQ_IMAGE": image, "PODMAN4_UNMAPPED_PORTS": unmapped},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pass 1" in result.stdout


def test_go_rabbitmq_module_starts_the_image(image: str, testcontainers_env: None) -> None:
    env = toolchains.go_environment()
    # No vet (`go test` vets by default, computing the analyzers' facts for every dependency: Docker's client
    # and the rest) and no symbol table or DWARF in the test binary: what the test checks is the module's run
    # against the image. The cold build took 74 s of CPU, 61 s without them.
    go_test = ["go", "test", "-count=1", "-vet=off", "-ldflags=-s -w", "-v"]
    result = _run(
        [*go_test, "-run", "TestRabbitMQModuleStartsTheImage", "./..."],
        toolchains.GO_DIR,
        {**env, "WARRENMQ_IMAGE": image},
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-4000:]
    assert "--- PASS: TestRabbitMQModuleStartsTheImage" in result.stdout
