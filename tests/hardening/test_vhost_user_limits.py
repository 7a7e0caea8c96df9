"""Vhost and user limits (set through the management API as an operator would) meeting pika
clients over real sockets: a vhost's max-connections and max-queues, a user's max-connections and
max-channels, with RabbitMQ 3.10's reply codes and texts (the texts are checked against the oracle in
tests/management and tests/compat)."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from tests.hardening.served import Served, serve


@pytest.fixture
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = serve(tmp_path_factory.mktemp("vhost-user-limits"), "")
    yield served
    served.stop()


def _put(broker: Served, path: str, body: object) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{broker.management_port}{path}",
        data=json.dumps(body).encode(),
        method="PUT",
        headers={
            "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode(),
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


def _connect(broker: Served, **overrides: object) -> pika.BlockingConnection:
    return pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", broker.port, socket_timeout=5, **overrides)
    )


def test_vhost_max_connections_refuses_connection_open_with_530(broker: Served) -> None:
    assert _put(broker, "/api/vhost-limits/%2F/max-connections", {"value": 1}) == 204
    first = _connect(broker)
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as refused:
        _connect(broker)
    assert str(refused.value.args[0]) == (
        "ConnectionClosedByBroker: (530) \"NOT_ALLOWED - access to vhost '/' refused for user 'guest': "
        'connection limit (1) is reached"'
    )
    first.close()
    _connect(broker).close()  # the slot is free again


def test_vhost_max_queues_refuses_the_declare_with_406(broker: Served) -> None:
    assert _put(broker, "/api/vhost-limits/%2F/max-queues", {"value": 1}) == 204
    connection = _connect(broker)
    channel = connection.channel()
    channel.queue_declare("limited-1", exclusive=True)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
        channel.queue_declare("limited-2", exclusive=True)
    assert (closed.value.reply_code, closed.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - cannot declare queue 'limited-2': queue limit in vhost '/' (1) is reached",
    )
    connection.close()


def test_user_max_connections_and_max_channels_close_with_530(broker: Served) -> None:
    assert _put(broker, "/api/user-limits/guest/max-connections", {"value": 1}) == 204
    assert _put(broker, "/api/user-limits/guest/max-channels", {"value": 2}) == 204
    first = _connect(broker)
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as refused:
        _connect(broker)
    assert str(refused.value.args[0]) == (
        "ConnectionClosedByBroker: (530) "
        "\"NOT_ALLOWED - connection refused for user 'guest': user connection limit (1) is reached\""
    )
    first.channel()
    first.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        first.channel()
    assert (closed.value.reply_code, closed.value.reply_text) == (
        530,
        "NOT_ALLOWED - number of channels opened for user 'guest' has reached the maximum allowed user limit "
        "of (2)",
    )
