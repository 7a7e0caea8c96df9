"""The log an operator reads, WarrenMQ's against RabbitMQ 3.10's for the same scenario: a connection that
logs in, fails a queue.declare on a precondition and closes; one dropped without connection.close; a refused
login; a policy set with rabbitmqctl; definitions imported with rabbitmqctl. Both logs are read from their
files (RABBITMQ_LOG_BASE) and compared record by record (level and text) once pids, addresses and ports are
normalised (``normalise``, the one place)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pika
import pika.exceptions
import pytest

from tests.ports import free_port

from .rabbitmq_node import RabbitMQNode, rabbitmq_available

pytestmark = [pytest.mark.compat, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ORACLE_CLI = "/usr/lib/rabbitmq/bin/rabbitmqctl"
RABBITMQCTL = "import sys; from broker.ctl.rabbitmqctl import main; sys.exit(main())"
# RabbitMQ's plain format: "2026-01-02 03:04:05.678901+00:00 [info] <0.674.0> text".
LINE = re.compile(r"^(\S+ \S+) \[(\w+)\] (<[^>]*>) ?(.*)$")
DEADLINE_S = 60.0


@dataclass
class Side:
    """One broker under test: its AMQP port, its log file, and the rabbitmqctl that reaches it."""

    port: int
    log_file: Path
    ctl_argv: list[str]
    env: dict[str, str]

    def ctl(self, *args: str) -> None:
        done = subprocess.run(
            [*self.ctl_argv, *args], env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr

    def records(self) -> list[tuple[str, str]]:
        """(level, text) per log record; a multi-line message's lines share their prefix (one record)."""
        out: list[tuple[str, str]] = []
        last: tuple[str, str, str] | None = None
        text = self.log_file.read_text(errors="replace") if self.log_file.exists() else ""
        for line in text.splitlines():
            match = LINE.match(line)
            if match is None:
                continue
            stamp, level, pid, message = match.groups()
            if (stamp, level, pid) == last:
                out[-1] = (level, out[-1][1] + "\n" + message)
            else:
                out.append((level, message))
            last = (stamp, level, pid)
        return out


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    if not rabbitmq_available():
        pytest.skip("no RabbitMQ to compare with: rabbitmq-server is not installed")
    node = RabbitMQNode(tmp_path_factory.mktemp("log-oracle"))
    node.start()
    try:
        yield Side(node.port, node.log_file, [ORACLE_CLI, "-n", node.node_name], node._environment())
    finally:
        node.stop()


@pytest.fixture(scope="module")
def warrenmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    base = tmp_path_factory.mktemp("log-warrenmq")
    conf = base / "rabbitmq.conf"
    conf.write_text(f"listeners.tcp.default = 127.0.0.1:{free_port()}\nmanagement.tcp.port = {free_port()}\n")
    (base / "home").mkdir()
    node = f"warrenmq-log-{os.getpid()}@localhost"
    env = {
        **os.environ,
        "HOME": str(base / "home"),  # the broker writes its CLI cookie here, the CLI reads it
        "RABBITMQ_CONFIG_FILE": str(conf),
        "RABBITMQ_NODENAME": node,
        "RABBITMQ_DIST_PORT": str(free_port()),
        "RABBITMQ_LOG_BASE": str(base / "log"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    try:
        yield Side(ready["amqp_port"], base / "log" / f"{node}.log", [sys.executable, "-c", RABBITMQCTL], env)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _local_port(connection: pika.BlockingConnection) -> int:
    return int(connection._impl._transport._sock.getsockname()[1])


def scenario(side: Side, definitions: Path) -> dict[int, str]:
    """Run the scenario; the client ports of its connections, each with the tag that stands for it."""
    params = pika.ConnectionParameters("127.0.0.1", side.port, connection_attempts=1, socket_timeout=10)
    tags: dict[int, str] = {}
    declaring = pika.BlockingConnection(params)
    tags[_local_port(declaring)] = "declaring"
    channel = declaring.channel()
    channel.queue_declare("log-q", durable=True)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker):
        channel.queue_declare("log-q", durable=False)
    declaring.close()

    dropped = pika.BlockingConnection(params)
    tags[_local_port(dropped)] = "dropped"
    sock = dropped._impl._transport._sock
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()

    refused_params = pika.ConnectionParameters(
        "127.0.0.1", side.port, credentials=pika.PlainCredentials("guest", "wrong"), connection_attempts=1
    )
    # pika names neither socket end of a refused connection: its port is found in the log, by elimination.
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(refused_params)

    side.ctl("set_policy", "log-p", "^log-", '{"max-length": 10}')
    side.ctl("import_definitions", str(definitions))
    return tags


def normalise(records: list[tuple[str, str]], tags: dict[int, str]) -> list[tuple[str, str]]:
    """The one place where the two logs are made comparable: pids become <pid>, the broker's address and
    port <broker>, a client's socket its tag; the connection whose login was refused (pika names neither
    of its socket's ends) is found by its "login refused" record. Only the scenario's records are kept:
    those naming its connections, its policy, or a definitions import."""
    address = re.compile(r"127\.0\.0\.1:(\d+) -> 127\.0\.0\.1:\d+")
    tags = dict(tags)
    for _, text in records:
        if "login refused" in text:
            tags.update((int(port), "refused") for port in address.findall(text))
    out: list[tuple[str, str]] = []
    for level, text in records:
        ports = [int(port) for port in address.findall(text)]
        concerns_node = (
            "policy 'log-p'" in text or "import definitions" in text or text.startswith("Importing ")
        )
        if not (ports and all(port in tags for port in ports)) and not concerns_node:
            continue
        shown = text
        for port in ports:
            shown = shown.replace(f"127.0.0.1:{port} ->", f"<{tags[port]}> ->")
        shown = re.sub(r"-> 127\.0\.0\.1:\d+", "-> <broker>", shown)
        out.append((level, re.sub(r"<[^<>\s]*\.[^<>\s]*>", "<pid>", shown)))
    return out


def _wait_for(
    side: Side, tags: dict[int, str], done: Callable[[list[tuple[str, str]]], bool]
) -> list[tuple[str, str]]:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        records = normalise(side.records(), tags)
        if done(records) or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


def _complete(records: list[tuple[str, str]]) -> bool:
    """Every connection's last line and the import's are in (the policy's line comes before the import)."""
    texts = [text for _, text in records]
    closed = [text for text in texts if text.startswith("closing AMQP connection")]
    return len(closed) >= 3 and any(text.startswith("Importing ") for text in texts)


EXPECTED = [
    ("info", "accepting AMQP connection <pid> (<declaring> -> <broker>)"),
    (
        "info",
        "connection <pid> (<declaring> -> <broker>): user 'guest' authenticated and granted access to "
        "vhost '/'",
    ),
    (
        "error",
        "Channel error on connection <pid> (<declaring> -> <broker>, vhost: '/', user: 'guest'), channel 1:\n"
        "operation queue.declare caused a channel exception precondition_failed: inequivalent arg 'durable' "
        "for queue 'log-q' in vhost '/': received 'false' but current is 'true'",
    ),
    ("info", "closing AMQP connection <pid> (<declaring> -> <broker>, vhost: '/', user: 'guest')"),
    ("info", "accepting AMQP connection <pid> (<dropped> -> <broker>)"),
    (
        "info",
        "connection <pid> (<dropped> -> <broker>): user 'guest' authenticated and granted access to "
        "vhost '/'",
    ),
    (
        "warning",
        "closing AMQP connection <pid> (<dropped> -> <broker>, vhost: '/', user: 'guest'):\n"
        "client unexpectedly closed TCP connection",
    ),
    ("info", "accepting AMQP connection <pid> (<refused> -> <broker>)"),
    (
        "error",
        "Error on AMQP connection <pid> (<refused> -> <broker>, state: starting):\n"
        "PLAIN login refused: user 'guest' - invalid credentials",
    ),
    ("info", "closing AMQP connection <pid> (<refused> -> <broker>)"),
    ("info", "Successfully set policy 'log-p' matching all names in virtual host '/' using pattern '^log-'"),
    ("info", "Asked to import definitions. Acting user: rmq-internal"),
    ("info", "Importing concurrently 1 queues..."),
]


def test_the_log_names_what_rabbitmq_names(oracle: Side, warrenmq: Side, tmp_path: Path) -> None:
    definitions = tmp_path / "definitions.json"
    queue = {"name": "log-defs", "vhost": "/", "durable": True, "auto_delete": False, "arguments": {}}
    definitions.write_text(json.dumps({"queues": [queue]}))
    logs = {}
    for name, side in (("rabbitmq", oracle), ("warrenmq", warrenmq)):
        tags = scenario(side, definitions)
        logs[name] = _wait_for(side, tags, _complete)
    # RabbitMQ's own log is the reference: the expectation above is checked against it first, so that the
    # test encodes RabbitMQ's behaviour and not WarrenMQ's.
    assert by_subject(logs["rabbitmq"]) == by_subject(EXPECTED)
    assert by_subject(logs["warrenmq"]) == by_subject(logs["rabbitmq"])


def by_subject(records: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The records grouped by the connection they name (the node's own last), each group in log order: one
    connection's last line and the next one's first may be written in either order by either broker."""
    subjects = ["<declaring>", "<dropped>", "<refused>"]

    def subject(record: tuple[str, str]) -> int:
        return next((i for i, tag in enumerate(subjects) if tag in record[1]), len(subjects))

    return sorted(records, key=subject)
