"""WarrenMQ's `rabbitmqadmin` against WarrenMQ, RabbitMQ 3.10's own rabbitmqadmin (the management plugin's
script, as the rabbitmq:*-management images ship it) against a private RabbitMQ node: the same command lines
print the same stdout and stderr with the same exit code, and leave the same objects behind. The command
lines are those Testcontainers for Java's RabbitMQContainer runs in the container (withVhost, withUser,
withPermission, withExchange, withQueue, withBinding, withPolicy, withOperatorPolicy, withVhostLimit: options
before or after the object type, JSON arguments), then the mistakes a script makes."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.management.http_differential import GUEST, Pair, start_pair

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]

ROOT = Path(__file__).resolve().parents[2]
ORACLE_ADMIN = Path(
    "/usr/lib/rabbitmq/lib/rabbitmq_server-3.10.8/plugins/rabbitmq_management-3.10.8/priv/www/cli/rabbitmqadmin"
)
# argv[0] as the installed console script names it (its usage errors print the program's name).
OURS = (
    "import sys; sys.argv[0] = 'rabbitmqadmin'; from broker.ctl.rabbitmqadmin import main; sys.exit(main())"
)

TESTCONTAINERS_COMMANDS: list[tuple[str, ...]] = [
    ("declare", "vhost", "name=vh1"),
    ("declare", "vhost", "name=vh2", "tracing=true"),
    ("declare", "user", "name=u1", "password=p1", "tags="),
    ("declare", "user", "name=u2", "password=p2", "tags=administrator,monitoring"),
    ("declare", "permission", "vhost=vh1", "user=u1", "configure=.*", "write=.*", "read=.*"),
    ("declare", "exchange", "name=ex1", "type=direct"),
    ("--vhost=vh1", "declare", "exchange", "name=ex2", "type=topic"),
    (
        "declare",
        "exchange",
        "name=ex3",
        "type=fanout",
        "auto_delete=false",
        "internal=false",
        "durable=true",
        "arguments={}",
    ),
    ("declare", "queue", "name=q1"),
    ("--vhost=vh1", "declare", "queue", "name=q2"),
    ("declare", "queue", "name=q3", "auto_delete=false", "durable=true", 'arguments={"x-message-ttl":1000}'),
    ("declare", "queue", "name=q4", "queue_type=quorum"),
    ("declare", "binding", "source=ex1", "destination=q1"),
    ("--vhost=vh1", "declare", "binding", "source=ex2", "destination=q2"),
    (
        "declare",
        "binding",
        "source=ex3",
        "destination=q3",
        "routing_key=ns.#",
        "destination_type=queue",
        'arguments={"x-match":"all"}',
    ),
    ("declare", "binding", "source=ex1", "destination=ex3", "destination_type=exchange", "routing_key=k"),
    ("declare", "policy", "name=pol1", "pattern=^max.*", 'definition={"max-length":1}'),
    (
        "declare",
        "policy",
        "name=pol2",
        "pattern=^q",
        "priority=2",
        "apply-to=queues",
        'definition={"message-ttl":5000}',
    ),
    ("declare", "policy", "--vhost=vh1", "name=pol3", "pattern=.*", 'definition={"max-length":9}'),
    ("declare", "operator_policy", "name=op1", "pattern=^q", 'definition={"max-length":100}'),
    ("declare", "vhost_limit", "vhost=vh1", "name=max-queues", "value=10"),
]
MISTAKES: list[tuple[str, ...]] = [
    (),
    ("frobnicate",),
    ("declare",),
    ("declare", "widget", "name=w"),
    ("declare", "queue"),
    ("declare", "queue", "q5"),
    ("declare", "queue", "name=q5", "colour=red"),
    ("declare", "user", "name=u3", "tags="),
    ("declare", "policy", "name=bad", "pattern=.*", "definition={not json"),
    ("declare", "binding", "source=nosuch", "destination=q1"),
    ("declare", "queue", "name=q1", "durable=false"),
    ("declare", "exchange", "name=e5", "type=bogus"),
    ("-u", "nobody", "-p", "wrong", "declare", "queue", "name=q6"),
    ("--vhost=novhost", "declare", "queue", "name=q7"),
    ("-q", "declare", "queue", "name=q8"),
    ("purge", "queue", "name=q1"),
    ("delete", "binding", "source=ex1", "destination_type=q", "destination=q1", "properties_key=~"),
    ("delete", "queue", "name=q8"),
    ("delete", "queue", "name=nosuch"),
    ("delete", "policy", "name=pol1"),
    ("delete", "user", "name=u2"),
    ("delete", "vhost", "name=vh2"),
    ("close", "connection", "name=nosuch"),
    ("--version",),
]


def _run(argv: list[str], port: int, args: tuple[str, ...]) -> tuple[int, str, str]:
    result = subprocess.run(
        [*argv, "-P", str(port), *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    return result.returncode, result.stdout, re.sub(r"\b\d{4,5}\b", "<port>", result.stderr)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from start_pair(tmp_path_factory.mktemp("rabbitmqadmin"))


def _runs(pair: Pair, commands: list[tuple[str, ...]]) -> list[str]:
    rabbit_port, warren_port = (int(base.rsplit(":", 1)[1]) for base in pair.bases)
    found = []
    for args in commands:
        theirs = _run(["/usr/bin/python3", str(ORACLE_ADMIN)], rabbit_port, args)
        ours = _run([sys.executable, "-c", OURS], warren_port, args)
        if theirs != ours:
            found.append(f"rabbitmqadmin {' '.join(args)}:\n  RabbitMQ {theirs!r}\n  WarrenMQ {ours!r}")
    return found


def _objects(base: str) -> dict[str, Any]:
    """What the commands made, in the fields both brokers report alike."""

    def get(path: str) -> Any:
        response = requests.get(base + path, auth=GUEST, timeout=10)
        response.raise_for_status()
        return response.json()

    def rows(path: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
        return sorted(({key: row.get(key) for key in keys} for row in get(path)), key=repr)

    return {
        "vhosts": rows("/api/vhosts", ("name", "tracing")),
        "users": rows("/api/users", ("name", "tags")),
        "permissions": rows("/api/permissions", ("user", "vhost", "configure", "write", "read")),
        "exchanges": rows("/api/exchanges", ("vhost", "name", "type", "durable", "auto_delete", "arguments")),
        "queues": rows("/api/queues", ("vhost", "name", "durable", "auto_delete", "arguments", "type")),
        "bindings": rows(
            "/api/bindings",
            ("vhost", "source", "destination", "destination_type", "routing_key", "arguments"),
        ),
        "policies": rows("/api/policies", ("vhost", "name", "pattern", "definition", "priority", "apply-to")),
        "operator_policies": rows("/api/operator-policies", ("vhost", "name", "pattern", "definition")),
        "vhost_limits": rows("/api/vhost-limits", ("vhost", "value")),
    }


def test_testcontainers_set_up_commands_print_and_make_what_rabbitmq_does(pair: Pair) -> None:
    assert _runs(pair, TESTCONTAINERS_COMMANDS) == []
    rabbit_base, warren_base = pair.bases
    assert _objects(warren_base) == _objects(rabbit_base)


def test_mistakes_get_rabbitmqs_errors_and_exit_codes(pair: Pair) -> None:
    # After the set-up above (module scope): the deletes and purges find its objects.
    assert _runs(pair, MISTAKES) == []
    rabbit_base, warren_base = pair.bases
    assert _objects(warren_base) == _objects(rabbit_base)
