"""`--definitions FILE` at boot: RabbitMQ's JSON applied before clients connect; clear errors otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pika
import pytest

from broker.core.access.passwords import check_password, hash_password
from broker.core.broker import Broker
from broker.management.definitions.document import DefinitionsError, apply_definitions, load_definitions
from tests.conftest import run_broker_cli, start_broker_process

# The shape `rabbitmqctl export_definitions` writes (RabbitMQ 3.10), trimmed.
DEFINITIONS: dict[str, Any] = {
    "rabbit_version": "3.10.8",
    "users": [
        {
            "name": "app",
            "password_hash": hash_password("secret"),
            "hashing_algorithm": "rabbit_password_hashing_sha256",
            "tags": [],
            "limits": {},
        },
        {"name": "guest", "password": "guest", "tags": ["administrator"]},
    ],
    "vhosts": [{"name": "/"}, {"name": "shop"}],
    "permissions": [{"user": "app", "vhost": "shop", "configure": ".*", "write": ".*", "read": ".*"}],
    "queues": [{"name": "orders", "vhost": "shop", "durable": True, "auto_delete": False, "arguments": {}}],
    "exchanges": [
        {
            "name": "events",
            "vhost": "shop",
            "type": "topic",
            "durable": True,
            "auto_delete": False,
            "internal": False,
            "arguments": {},
        }
    ],
    "bindings": [
        {
            "source": "events",
            "vhost": "shop",
            "destination": "orders",
            "destination_type": "queue",
            "routing_key": "order.#",
            "arguments": {},
        }
    ],
}


def test_boot_with_definitions_serves_the_topology_to_their_users(tmp_path: Path) -> None:
    path = tmp_path / "definitions.json"
    path.write_text(json.dumps(DEFINITIONS))
    broker = start_broker_process("--definitions", str(path))
    try:
        params = pika.ConnectionParameters(
            broker.host, broker.port, "shop", pika.PlainCredentials("app", "secret")
        )
        connection = pika.BlockingConnection(params)
        channel = connection.channel()
        channel.basic_publish("events", "order.created", b"x")
        declared = channel.queue_declare("orders", passive=True)
        assert declared.method.message_count == 1
        connection.close()
    finally:
        broker.stop()


def test_password_hashes_use_rabbitmqs_salted_sha256() -> None:
    # The guest user's hash from `rabbitmqctl export_definitions` on RabbitMQ 3.10.8.
    stored = "xdKP3/mksWC/fL7xz5zR6cb5biMRqTjRz2dH6oadeS14hsfS"
    assert check_password("guest", stored)
    assert not check_password("guesT", stored)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("[]", "expected a JSON object at the top level, got list"),
        ('{"queues": {}}', "'queues' must be a list, got dict"),
        ('{"queues": [{"name": "q"}]}', "queues[0] lacks required string field(s) vhost"),
        (
            '{"bindings": [{"source": "a", "vhost": "/", "destination": "b", "destination_type": "topic"}]}',
            "bindings[0] ('a'): destination_type must be 'queue' or 'exchange'",
        ),
        ('{"policies": [{"name": "p"}]}', "policies[0] lacks required string field(s) vhost"),
        (
            '{"policies": [{"name": "p", "vhost": "/", "pattern": "(", "definition": {"max-length": 1}}]}',
            """policies[0] ('p'): pattern should be regular expression but is invalid: {"missing )",1}""",
        ),
        (
            '{"parameters": [{"component": "federation-upstream", "vhost": "/", "name": "up", "value": {}}]}',
            "parameters[0] ('up'): component federation-upstream is not supported by WarrenMQ",
        ),
    ],
)
def test_malformed_files_are_refused_naming_the_file_and_the_problem(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "defs.json"
    path.write_text(content)
    with pytest.raises(DefinitionsError) as error:
        load_definitions(path)
    assert str(error.value) == f"{path}: {message}"


def test_entities_the_broker_refuses_are_reported_with_rabbitmqs_text() -> None:
    data = {"queues": [{"name": "q", "vhost": "nowhere"}]}
    with pytest.raises(DefinitionsError) as error:
        apply_definitions(Broker(lambda cb: None), data, "d.json")
    assert str(error.value) == "d.json: queues[0]: vhost 'nowhere' is not defined"
    data = {"exchanges": [{"name": "amq.mine", "vhost": "/", "type": "direct"}]}
    with pytest.raises(DefinitionsError) as error:
        apply_definitions(Broker(lambda cb: None), data, "d.json")
    assert str(error.value).startswith("d.json: exchanges[0]: ACCESS_REFUSED - ")


def test_serve_exits_1_with_the_error_when_the_file_is_malformed(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"vhosts": "x"}')
    result = run_broker_cli(
        "serve", "--port", "0", "--management-port", "-1", "--definitions", str(path), timeout_s=30
    )
    assert result.returncode == 1
    assert result.stdout == ""  # never reported ready
    assert f"warrenmq: {path}: 'vhosts' must be a list, got str" in result.stderr
