"""The event exchange over real sockets, without the oracle: off unless enabled_plugins lists it, internal,
and every vhost's events land in vhost "/" with the vhost and the acting user in the headers
(tests/compat/test_event_exchange.py compares the events field by field with RabbitMQ's)."""

from __future__ import annotations

import base64
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.conftest import BrokerProcess, start_broker_process

EVENTS = "amq.rabbitmq.event"


@pytest.fixture(scope="module")
def events_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    plugins = Path(tmp_path_factory.mktemp("events")) / "enabled_plugins"
    plugins.write_text("[rabbitmq_management,rabbitmq_event_exchange].\n")
    broker = start_broker_process(
        "--enabled-plugins-file",
        str(plugins),
        *("--vhost", "/", "--vhost", "other", "--user", "guest:guest", "--user", "admin:s3cret"),
    )
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def events_url(events_broker: BrokerProcess) -> str:
    return events_broker.url


def _close_code(url: str, action: Any) -> int:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        action(connection.channel())
        return 0
    except pika.exceptions.ChannelClosedByBroker as error:
        return int(error.args[0])
    finally:
        if connection.is_open:
            connection.close()


def test_off_without_the_plugin(amqp_url: str) -> None:
    """The shared broker has no enabled_plugins file: the event exchange is not among its defaults."""
    assert _close_code(amqp_url, lambda ch: ch.exchange_declare(EVENTS, "topic", passive=True)) == 404


def test_clients_cannot_publish_to_it(events_url: str) -> None:
    def publish(ch: Any) -> None:
        ch.confirm_delivery()
        ch.basic_publish(EVENTS, "queue.created", b"")

    assert _close_code(events_url, publish) == 403


def test_events_of_another_vhost_and_of_the_broker(events_url: str) -> None:
    watcher = pika.BlockingConnection(pika.URLParameters(events_url))
    try:
        watch = watcher.channel()
        capture = watch.queue_declare("", exclusive=True).method.queue
        watch.queue_bind(capture, EVENTS, "queue.*")
        other = pika.BlockingConnection(pika.URLParameters(events_url.rstrip("/") + "/other"))
        ch = other.channel()
        ch.queue_declare("auto", auto_delete=True)
        tag = ch.basic_consume("auto", lambda *_: None)
        ch.basic_cancel(tag)  # the last consumer gone: the broker deletes the queue
        other.close()
        events = []
        while (got := watch.basic_get(capture, auto_ack=True))[0] is not None:
            method, properties, _ = got
            headers = properties.headers
            events.append(
                (method.routing_key, headers["name"], headers["vhost"], headers["user_who_performed_action"])
            )
        assert events == [
            ("queue.created", "auto", "other", "guest"),
            ("queue.deleted", "auto", "other", "rmq-internal"),  # the broker deleted it
        ]
    finally:
        watcher.close()


def test_http_api_actions_name_the_http_user(events_broker: BrokerProcess) -> None:
    """A queue deleted through the management API is reported with the API's user, as RabbitMQ does."""
    watcher = pika.BlockingConnection(pika.URLParameters(events_broker.url))
    try:
        watch = watcher.channel()
        capture = watch.queue_declare("", exclusive=True).method.queue
        watch.queue_bind(capture, EVENTS, "queue.deleted")
        watch.queue_declare("via-http")
        request = urllib.request.Request(
            f"http://127.0.0.1:{events_broker.management_port}/api/queues/%2F/via-http", method="DELETE"
        )
        request.add_header("Authorization", "Basic " + base64.b64encode(b"admin:s3cret").decode())
        with urllib.request.urlopen(request) as response:
            assert response.status == 204
        method, properties, _ = watch.basic_get(capture, auto_ack=True)
        assert method is not None
        assert properties.headers["user_who_performed_action"] == "admin"
    finally:
        watcher.close()


def test_event_exchange_vhost_from_rabbitmq_conf(tmp_path: Path) -> None:
    """rabbitmq.conf ``event_exchange.vhost`` moves the exchange (RabbitMQ's default is "/")."""
    (tmp_path / "enabled_plugins").write_text("[rabbitmq_event_exchange].\n")
    (tmp_path / "rabbitmq.conf").write_text("event_exchange.vhost = events\n")
    broker = start_broker_process(
        *("--enabled-plugins-file", str(tmp_path / "enabled_plugins")),
        *("--config-file", str(tmp_path / "rabbitmq.conf"), "--vhost", "/", "--vhost", "events"),
    )
    try:
        url = broker.url.rstrip("/")
        passive = lambda ch: ch.exchange_declare(EVENTS, "topic", passive=True)  # noqa: E731
        assert _close_code(url + "/events", passive) == 0
        assert _close_code(url + "/", passive) == 404
    finally:
        broker.stop()


def test_interleaved_http_request_and_amqp_method_each_name_their_own_user(
    events_broker: BrokerProcess,
) -> None:
    """An HTTP request that awaits its body while an AMQP channel declares a queue: each event names the
    user who acted. (With the acting user shared on the event bus, the channel's user leaked into the
    request's event.)"""
    watcher = pika.BlockingConnection(pika.URLParameters(events_broker.url))
    try:
        watch = watcher.channel()
        capture = watch.queue_declare("", exclusive=True).method.queue
        watch.queue_bind(capture, EVENTS, "queue.created")
        body = b'{"durable": false}'
        with socket.create_connection(("127.0.0.1", int(events_broker.management_port or 0))) as http:
            http.sendall(
                b"PUT /api/queues/%2F/interleaved-http HTTP/1.1\r\nHost: localhost\r\n"
                b"Authorization: Basic " + base64.b64encode(b"admin:s3cret") + b"\r\n"
                b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            )
            # 100 Continue: the request is authorised and its handler now awaits the body.
            assert http.recv(1024).startswith(b"HTTP/1.1 100")
            watch.queue_declare("interleaved-amqp")  # guest, while the request is in flight
            http.sendall(body)
            assert http.recv(1024).split(b" ", 2)[1] == b"201"
        seen = {}
        while (got := watch.basic_get(capture, auto_ack=True))[0] is not None:
            headers = got[1].headers
            seen[headers["name"]] = headers["user_who_performed_action"]
        assert seen == {"interleaved-amqp": "guest", "interleaved-http": "admin"}
    finally:
        watcher.close()


def _http(broker: BrokerProcess, method: str, path: str, body: bytes | None = None) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{broker.management_port}{path}", data=body, method=method
    )
    request.add_header("Authorization", "Basic " + base64.b64encode(b"admin:s3cret").decode())
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request) as response:
        return int(response.status)


def test_user_vhost_and_connection_lifecycle_events(events_broker: BrokerProcess) -> None:
    """Without the oracle: users, a vhost and its permission, a connection and its channel, each event
    naming who acted (the HTTP user, the connecting user, the broker for vhost.down)."""
    watcher = pika.BlockingConnection(pika.URLParameters(events_broker.url))
    try:
        watch = watcher.channel()
        capture = watch.queue_declare("", exclusive=True).method.queue
        for key in ("user.#", "vhost.#", "permission.#", "connection.#", "channel.#"):
            watch.queue_bind(capture, EVENTS, key)
        assert _http(events_broker, "PUT", "/api/users/lifecycle", b'{"password": "pw", "tags": ""}') == 201
        assert _http(events_broker, "PUT", "/api/vhosts/lifecycle-v", b"{}") == 201
        body = b'{"configure": ".*", "write": ".*", "read": ".*"}'
        assert _http(events_broker, "PUT", "/api/permissions/lifecycle-v/lifecycle", body) == 201
        url = events_broker.url.replace("guest:guest", "lifecycle:pw").rstrip("/") + "/lifecycle-v"
        client = pika.BlockingConnection(pika.URLParameters(url))
        client.channel().close()
        client.close()
        assert _http(events_broker, "DELETE", "/api/vhosts/lifecycle-v") == 204
        assert _http(events_broker, "DELETE", "/api/users/lifecycle") == 204
        events = []
        while (got := watch.basic_get(capture, auto_ack=True))[0] is not None:
            headers = got[1].headers
            events.append((got[0].routing_key, headers.get("user_who_performed_action")))
    finally:
        watcher.close()
    assert events == [
        ("user.created", "admin"),
        ("vhost.created", "admin"),
        ("permission.created", "admin"),  # the creator's own permission in the new vhost
        ("permission.created", "admin"),
        ("user.authentication.success", None),
        ("connection.created", "lifecycle"),
        ("channel.created", "lifecycle"),
        ("channel.closed", "lifecycle"),
        ("connection.closed", None),
        ("permission.deleted", "admin"),
        ("permission.deleted", "admin"),
        ("vhost.deleted", "admin"),
        ("vhost.down", "rmq-internal"),
        ("user.deleted", "admin"),
    ]
