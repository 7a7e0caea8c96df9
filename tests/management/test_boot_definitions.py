"""A definitions file exported from RabbitMQ 3.10.8, applied at boot: its users log in over AMQP and HTTP with
their RabbitMQ password hashes, and their tags and permissions are what the API shows."""

from __future__ import annotations

import json
from pathlib import Path

import pika
import requests

from tests.conftest import start_broker_process
from tests.management.test_access import RABBITMQ_GUEST_HASH

# Trimmed from GET /api/definitions on the oracle node (guest's hash is for the password "guest").
EXPORT = {
    "rabbit_version": "3.10.8",
    "rabbitmq_version": "3.10.8",
    "product_name": "RabbitMQ",
    "product_version": "3.10.8",
    "users": [
        {
            "name": "exported",
            "password_hash": RABBITMQ_GUEST_HASH,
            "hashing_algorithm": "rabbit_password_hashing_sha256",
            "tags": ["monitoring"],
            "limits": {},
        }
    ],
    "vhosts": [{"name": "exported-v", "description": "from RabbitMQ", "tags": [], "metadata": {}}],
    "permissions": [
        {"user": "exported", "vhost": "exported-v", "configure": ".*", "write": ".*", "read": ".*"}
    ],
    "topic_permissions": [],
    "parameters": [],
    "global_parameters": [
        {"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-B2LQ5rEV04yvwu1veb38Mg"}
    ],
    "policies": [],
    "queues": [{"name": "pq", "vhost": "exported-v", "durable": True, "auto_delete": False, "arguments": {}}],
    "exchanges": [],
    "bindings": [],
}


def test_a_rabbitmq_export_boots_and_its_users_log_in(tmp_path: Path) -> None:
    path = tmp_path / "definitions.json"
    path.write_text(json.dumps(EXPORT))
    broker = start_broker_process("--definitions", str(path), "--data-dir", "none")
    try:
        base = f"http://127.0.0.1:{broker.management_port}"
        whoami = requests.get(f"{base}/api/whoami", auth=("exported", "guest"), timeout=10)
        assert whoami.json() == {"name": "exported", "tags": ["monitoring"]}
        vhost = requests.get(f"{base}/api/vhosts/exported-v", auth=("guest", "guest"), timeout=10).json()
        assert vhost["description"] == "from RabbitMQ"
        url = f"amqp://exported:guest@127.0.0.1:{broker.port}/exported-v"
        connection = pika.BlockingConnection(pika.URLParameters(url))
        declared = connection.channel().queue_declare("pq", passive=True)
        assert declared.method.message_count == 0
        connection.close()
    finally:
        broker.stop()
