"""Every queue and exchange name RabbitMQ accepts works everywhere.

Any UTF-8 up to 255 bytes: NUL, ``*``, ``#``, brackets, slashes, quotes, control characters, non-ASCII, the
longest name. Each scenario runs over real sockets side by side with RabbitMQ where it is the spec (replies
and their fields), then through what only WarrenMQ has to get right for itself: a restart from its SQLite
store, the management API's per-name URLs, definitions exported and imported into a fresh broker.
"""

from __future__ import annotations

import base64
import json
import signal
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.conftest import BrokerProcess, start_broker_process, url_pika_params

from .wire import oracle_url

__all__ = ["oracle_url"]  # the fixture, imported for pytest

AWKWARD = [
    "ünïcode-名前-🐇",
    "nul\x00byte",
    "*",
    "#",
    "a(b)[c]{d}",
    "sp ace/slash\\back",
    "tab\tcontrol\x01",
    "'quote\"",
    "%2F?x=1&y#frag",
    "é" * 127 + "x",  # 255 bytes
]
IDS = [f"name{i}" for i in range(len(AWKWARD))]


def _scenario(url: str, name: str) -> dict[str, Any]:
    """Declare a queue and a topic exchange of that name, bind, publish, get, return, purge, delete: every
    reply field that carries the name, as the client saw it."""
    seen: dict[str, Any] = {}
    with pika.BlockingConnection(url_pika_params(url)) as connection:
        channel = connection.channel()
        ok = channel.queue_declare(name, auto_delete=False)
        seen["declare_ok"] = (ok.method.queue, ok.method.message_count)
        seen["passive"] = channel.queue_declare(name, passive=True).method.queue
        channel.exchange_declare(name, "topic")
        channel.exchange_declare(name, "topic", passive=True)
        channel.queue_bind(name, name, routing_key=name)
        channel.confirm_delivery()
        channel.basic_publish(name, name, b"routed", mandatory=True)
        method, _, body = channel.basic_get(name, auto_ack=False)
        assert method is not None
        seen["get_ok"] = (method.exchange, method.routing_key, body)
        channel.basic_nack(method.delivery_tag, requeue=True)
        tag = channel.basic_consume(name, lambda *args: None, consumer_tag=name)
        seen["consume_ok"] = tag
        channel.basic_cancel(tag)
        returned: list[tuple[str, str, int]] = []
        channel.add_on_return_callback(
            lambda _ch, m, _p, _b: returned.append((m.exchange, m.routing_key, m.reply_code))
        )
        try:
            channel.basic_publish(name, "unbound." + name[:100], b"back", mandatory=True)
        except pika.exceptions.UnroutableError:
            pass
        connection.process_data_events(0.2)
        seen["return"] = returned
        seen["purge_ok"] = channel.queue_purge(name).method.message_count
        channel.queue_unbind(name, name, routing_key=name)
        channel.exchange_delete(name)
        seen["delete_ok"] = channel.queue_delete(name).method.message_count
        try:
            channel.queue_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as error:
            seen["gone"] = (error.reply_code, error.reply_text)
    return seen


@pytest.mark.compat
@pytest.mark.parametrize("name", AWKWARD, ids=IDS)
def test_awkward_names_in_every_reply_as_rabbitmq(name: str, amqp_url: str, oracle_url: str) -> None:
    theirs = _scenario(oracle_url, name)
    ours = _scenario(amqp_url, name)
    assert ours == theirs
    assert ours["declare_ok"] == (name, 0)


# -- persistence and the management plane (WarrenMQ only) -------------------------------------------------


def _broker(data_dir: Path) -> BrokerProcess:
    return start_broker_process("--data-dir", str(data_dir))


def _http(broker: BrokerProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    port = broker.management_port
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def _quoted(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _declare_all(url: str) -> None:
    with pika.BlockingConnection(url_pika_params(url)) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        for name in AWKWARD:
            channel.queue_declare(name, durable=True)
            channel.exchange_declare(name, "topic", durable=True)
            channel.queue_bind(name, name, routing_key=name)
            channel.basic_publish(
                name, name, name.encode(), pika.BasicProperties(delivery_mode=2), mandatory=True
            )


def _check_all(url: str, messages: bool) -> None:
    with pika.BlockingConnection(url_pika_params(url)) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        for name in AWKWARD:
            assert channel.queue_declare(name, passive=True).method.queue == name
            channel.exchange_declare(name, passive=True)
            if messages:
                method, _, body = channel.basic_get(name, auto_ack=True)
                assert method is not None, name
                assert (method.exchange, method.routing_key, body) == (name, name, name.encode())
            # The binding survived: a new publish is routed (mandatory + confirm: unroutable would raise).
            channel.basic_publish(name, name, b"again", mandatory=True)


@pytest.mark.slow
def test_awkward_names_survive_a_restart_and_travel_through_management_and_definitions(
    tmp_path: Path,
) -> None:
    broker = _broker(tmp_path / "data")
    try:
        _declare_all(broker.url)
        assert broker.stop(signal.SIGTERM) == 0
        broker = _broker(tmp_path / "data")
        _check_all(broker.url, messages=True)

        for name in AWKWARD:
            status, queue = _http(broker, "GET", f"/api/queues/%2F/{_quoted(name)}")
            assert status == 200, (name, queue)
            assert queue["name"] == name
            status, exchange = _http(broker, "GET", f"/api/exchanges/%2F/{_quoted(name)}")
            assert status == 200, (name, exchange)
            assert exchange["name"] == name
            status, bindings = _http(broker, "GET", f"/api/queues/%2F/{_quoted(name)}/bindings")
            assert status == 200
            assert {(b["source"], b["routing_key"]) for b in bindings} >= {(name, name)}
        status, listed = _http(broker, "GET", "/api/queues")
        assert status == 200
        assert set(AWKWARD) <= {q["name"] for q in listed}

        status, definitions = _http(broker, "GET", "/api/definitions")
        assert status == 200
        assert set(AWKWARD) <= {q["name"] for q in definitions["queues"]}
    finally:
        broker.stop()

    fresh = _broker(tmp_path / "fresh")
    try:
        status, answer = _http(fresh, "POST", "/api/definitions", definitions)
        assert status in (200, 201, 204), answer
        _check_all(fresh.url, messages=False)
        for name in AWKWARD:  # and deletable by name over HTTP
            status, answer = _http(fresh, "DELETE", f"/api/queues/%2F/{_quoted(name)}")
            assert status == 204, (name, answer)
    finally:
        fresh.stop()
