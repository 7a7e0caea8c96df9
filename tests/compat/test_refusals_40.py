"""403 ACCESS_REFUSED texts over AMQP 0-9-1 as RabbitMQ 4.0.5 words them (the permission first: "write
access to exchange ..."), against WarrenMQ under ``--profile rabbitmq-4.0``; the same refusals against 3.10.8
say "access to ..." (tests/compat/test_access_control.py). The oracle skips with the reason when podman or its
image is missing."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions
import pytest
import requests

from tests.compat.amqp10_support import BROKERS, broker_http_url, broker_port

pytestmark = pytest.mark.compat

# What the refused user may do: nothing on "/", but write routing keys starting with "a" on amq.topic.
PERMISSIONS = {"configure": "", "write": "^amq\\.topic$", "read": ""}
TOPIC = {"exchange": "amq.topic", "write": "^a", "read": ".*"}


def _publish(exchange: str, key: str) -> Callable[[Any], None]:
    def run(channel: Any) -> None:
        channel.confirm_delivery()
        channel.basic_publish(exchange, key, b"x")

    return run


ATTEMPTS: dict[str, Callable[[Any], None]] = {
    "publish to amq.direct": _publish("amq.direct", "k"),
    "publish to the default exchange": _publish("", "k"),
    "publish a refused routing key": _publish("amq.topic", "b.x"),
    "declare a queue": lambda channel: channel.queue_declare("refused-q"),
    "get from a queue": lambda channel: channel.basic_get("amq.rabbitmq.trace"),
    "bind a queue": lambda channel: channel.queue_bind("amq.rabbitmq.trace", "amq.direct", "k"),
}


def _refusals(port: int, http_url: str) -> dict[str, str]:
    user = f"refused-{uuid.uuid4().hex[:8]}"
    admin = ("guest", "guest")
    requests.put(f"{http_url}/api/users/{user}", auth=admin, json={"password": "p", "tags": ""}, timeout=10)
    requests.put(f"{http_url}/api/permissions/%2F/{user}", auth=admin, json=PERMISSIONS, timeout=10)
    requests.put(f"{http_url}/api/topic-permissions/%2F/{user}", auth=admin, json=TOPIC, timeout=10)
    texts: dict[str, str] = {}
    try:
        for name, attempt in ATTEMPTS.items():
            parameters = pika.ConnectionParameters(
                "127.0.0.1", port, credentials=pika.PlainCredentials(user, "p")
            )
            connection = pika.BlockingConnection(parameters)
            try:
                attempt(connection.channel())
                texts[name] = "allowed"
            except pika.exceptions.ChannelClosedByBroker as closed:
                texts[name] = f"{closed.reply_code} {closed.reply_text}"
            finally:
                if connection.is_open:
                    connection.close()
    finally:
        requests.delete(f"{http_url}/api/users/{user}", auth=admin, timeout=10)
    return {name: text.replace(user, "<user>") for name, text in texts.items()}


def test_refusals_name_their_permission_as_rabbitmq_40_does(request: pytest.FixtureRequest) -> None:
    ours, theirs = (
        _refusals(broker_port(request, which), broker_http_url(request, which)) for which in BROKERS
    )
    assert ours == theirs
    assert theirs["declare a queue"].startswith("403 ACCESS_REFUSED - configure access to queue")
