"""The event-exchange scenario run against both brokers: topology changes made by one client while a capture
queue bound to ``amq.rabbitmq.event`` collects the events; each event reduced to what must match."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions

from .scenarios.kit import polling

EVENT_EXCHANGE = "amq.rabbitmq.event"
# Node- and run-specific values: compared by type only.
_VOLATILE = {"timestamp_in_ms", "channel"}


def _shape(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return value


def _event(method: Any, properties: Any, body: bytes) -> dict[str, Any]:
    headers = dict(properties.headers or {})
    fields = {
        key: (type(value).__name__ if key in _VOLATILE else _shape(value)) for key, value in headers.items()
    }
    if fields.get("owner_pid"):
        fields["owner_pid"] = "a pid"  # an exclusive queue's owner: node-specific
    return {
        "routing_key": method.routing_key,
        "headers": dict(sorted(fields.items())),
        # pika decodes an AMQP long (l) as its ``long``, a signedint (I) as ``int``: the wire types show.
        "types": {key: type(value).__name__ for key, value in sorted(headers.items())},
        "delivery_mode": properties.delivery_mode,
        "timestamp_set": properties.timestamp is not None,
        "timestamp_matches_ms": properties.timestamp == headers.get("timestamp_in_ms", 0) // 1000,
        "other_properties": [
            name
            for name in (
                "content_type",
                "content_encoding",
                "priority",
                "correlation_id",
                "reply_to",
                "expiration",
                "message_id",
                "type",
                "user_id",
                "app_id",
            )
            if getattr(properties, name, None) is not None
        ],
        "body": body,
    }


def run_event_scenario(url: str) -> list[dict[str, Any]]:
    """Declare, bind, consume, cancel, unbind and delete; the events seen, in order."""
    watcher = pika.BlockingConnection(pika.URLParameters(url))
    try:
        watch = watcher.channel()
        capture = watch.queue_declare("ee.capture", exclusive=True).method.queue
        for key in ("queue.#", "exchange.#", "binding.#", "consumer.#"):
            watch.queue_bind(capture, EVENT_EXCHANGE, key)
        actor = pika.BlockingConnection(pika.URLParameters(url))
        try:
            ch = actor.channel()
            ch.exchange_declare("ee.x", "topic", durable=True, arguments={"alternate-exchange": "ee.ae"})
            ch.queue_declare("ee.q", arguments={"x-max-length": 5})
            ch.queue_bind("ee.q", "ee.x", "k.#", arguments={"a": 1})
            ch.exchange_bind("amq.fanout", "ee.x", "e2e")
            tag = ch.basic_consume("ee.q", lambda *_: None, consumer_tag="ee.tag", exclusive=True)
            ch.basic_cancel(tag)
            ch.exchange_unbind("amq.fanout", "ee.x", "e2e")
            ch.queue_unbind("ee.q", "ee.x", "k.#", arguments={"a": 1})
            ch.queue_delete("ee.q")
            ch.exchange_delete("ee.x")
            ch.queue_declare("ee.auto", auto_delete=True)
            ch.basic_cancel(ch.basic_consume("ee.auto", lambda *_: None, consumer_tag="ee.auto-tag"))
        finally:
            actor.close()
        closing = pika.BlockingConnection(pika.URLParameters(url))
        ch = closing.channel()
        ch.queue_declare("ee.excl", exclusive=True)
        ch.basic_consume("ee.excl", lambda *_: None, consumer_tag="ee.excl-tag")
        closing.close()  # the broker removes the consumer and deletes the queue
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + 10
        with polling():  # how many rounds until the last event shows is timing
            while time.monotonic() < deadline:
                method, properties, body = watch.basic_get(capture, auto_ack=True)
                if method is None:
                    # RabbitMQ deletes an exclusive queue asynchronously after its owner closes.
                    if events and events[-1]["headers"].get("name") == "ee.excl":
                        break
                    watcher.sleep(0.05)
                    continue
                events.append(_event(method, properties, body))
        return events
    finally:
        watcher.close()


# -- users, vhosts, permissions, policies, parameters, limits, connections and channels --------------------

ADMIN_KEYS = (
    "user.#",
    "vhost.#",
    "permission.#",
    "topic.#",
    "policy.#",
    "operator.#",
    "parameter.#",
    "connection.#",
    "channel.#",
    "queue.#",
    "exchange.#",
)
_PID = re.compile(r"<[^<>]+>")
_ADDRESS = re.compile(r"(\d+\.\d+\.\d+\.\d+):\d+")


def _http(base: str, method: str, path: str, body: Any = None) -> int:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


class _Normaliser:
    """Run-specific values made comparable: pids numbered in order of first appearance, ports, node names
    and millisecond timestamps replaced by their kind."""

    def __init__(self) -> None:
        self.pids: dict[str, str] = {}

    def value(self, key: str, value: Any) -> Any:
        value = _shape(value)
        if key in ("timestamp_in_ms", "connected_at"):
            return type(value).__name__
        if key in ("peer_port", "port"):
            return "a port"
        if key == "node":
            return "the node"
        if key == "cluster_state":
            return {"nodes": len(value), "states": sorted(value.values())}
        if key == "client_properties":
            # The client library's own text (platform, version) is the same on both sides: keep it whole.
            return value
        if isinstance(value, str):
            value = _PID.sub(self._pid, value) if value.startswith("<") else value
            return _ADDRESS.sub(r"\1:port", value)
        return value

    def _pid(self, match: re.Match[str]) -> str:
        return self.pids.setdefault(match.group(0), f"pid{len(self.pids) + 1}")

    def event(self, method: Any, properties: Any) -> dict[str, Any]:
        headers = dict(properties.headers or {})
        return {
            "routing_key": method.routing_key,
            "headers": {key: self.value(key, headers[key]) for key in sorted(headers)},
            "types": {key: type(value).__name__ for key, value in sorted(headers.items())},
            "delivery_mode": properties.delivery_mode,
            "timestamp_matches_ms": properties.timestamp == headers.get("timestamp_in_ms", 0) // 1000,
        }


def run_admin_scenario(url: str, http: str) -> list[dict[str, Any]]:
    """Users, a vhost with permissions, policies, parameters and limits, connections and channels (one
    refused login), then the vhost deleted under an open connection and the users deleted."""
    watcher = pika.BlockingConnection(pika.URLParameters(url))
    try:
        watch = watcher.channel()
        capture = watch.queue_declare("ee.admin", exclusive=True).method.queue
        for key in ADMIN_KEYS:
            watch.queue_bind(capture, EVENT_EXCHANGE, key)
        evu = url.replace("guest:guest", "evu:pw2").rstrip("/") + "/evv"
        for method, path, body in (
            ("PUT", "/api/users/evu", {"password": "pw", "tags": "monitoring"}),
            ("PUT", "/api/users/evu", {"password": "pw2", "tags": "management"}),
            ("PUT", "/api/users/evu2", {"password_hash": "", "tags": ""}),
            ("PUT", "/api/vhosts/evv", {"description": 'd "q"', "tags": "a,b"}),
            ("PUT", "/api/vhosts/evv", {"description": "e"}),
            ("PUT", "/api/permissions/evv/evu", {"configure": ".*", "write": ".*", "read": ".*"}),
            ("PUT", "/api/topic-permissions/evv/evu", {"exchange": "amq.topic", "write": "^a", "read": ".*"}),
            (
                "PUT",
                "/api/policies/evv/p1",
                {"pattern": "^q", "definition": {"max-length": 5}, "priority": 1},
            ),
            (
                "PUT",
                "/api/operator-policies/evv/op1",
                {"pattern": "^q", "definition": {"max-length": 7}, "apply-to": "queues"},
            ),
            ("PUT", "/api/global-parameters/ee-gp", {"value": {"a": 1}}),
            ("PUT", "/api/vhost-limits/evv/max-connections", {"value": 10}),
            ("PUT", "/api/user-limits/evu/max-channels", {"value": 3}),
        ):
            assert _http(http, method, path, body) in (201, 204), (method, path)
        drain = _Drain(watcher, watch, capture)
        client = pika.BlockingConnection(pika.URLParameters(evu))
        channel = client.channel()
        channel.queue_declare("q1")
        channel.close()
        client.close()
        try:
            pika.BlockingConnection(pika.URLParameters(evu.replace("evu:pw2", "evu:wrong")))
        except pika.exceptions.AMQPError:
            pass
        # Both brokers emit a connection's connection.closed when its socket process ends, which races the
        # next HTTP call (a refused login's comes after its close-ok): wait for both before going on.
        drain.until(lambda events: _count(events, "connection.closed") >= 2)
        cleanup: tuple[tuple[str, str, Any], ...] = (
            ("DELETE", "/api/user-limits/evu/max-channels", None),
            ("DELETE", "/api/vhost-limits/evv/max-connections", None),
            ("PUT", "/api/vhost-limits/evv/max-queues", {"value": 5}),
            ("DELETE", "/api/global-parameters/ee-gp", None),
            ("DELETE", "/api/operator-policies/evv/op1", None),
            ("DELETE", "/api/topic-permissions/evv/evu", None),
        )
        for method, path, body in cleanup:
            assert _http(http, method, path, body) == 204, (method, path)
        # Left open: deleting the vhost closes it, its channel first.
        lingering = pika.BlockingConnection(pika.URLParameters(url.rstrip("/") + "/evv"))
        lingering.channel()
        assert _http(http, "DELETE", "/api/vhosts/evv") == 204
        for name in ("evu", "evu2"):
            assert _http(http, "DELETE", f"/api/users/{name}") == 204
        # The vhost's connection closes asynchronously in RabbitMQ: wait for its connection.closed.
        events = drain.until(
            lambda events: (
                _count(events, "connection.closed") >= 3
                and "evu2" in [e["headers"].get("name") for e in events if e["routing_key"] == "user.deleted"]
            )
        )
        try:
            lingering.close()
        except pika.exceptions.AMQPError:
            pass  # closed by the vhost's deletion
        return events
    finally:
        watcher.close()


def _count(events: list[dict[str, Any]], routing_key: str) -> int:
    return sum(event["routing_key"] == routing_key for event in events)


class _Drain:
    """The capture queue emptied as the scenario goes, into one list of normalised events."""

    def __init__(self, watcher: Any, watch: Any, capture: str) -> None:
        self.watcher, self.watch, self.capture = watcher, watch, capture
        self.normaliser = _Normaliser()
        self.events: list[dict[str, Any]] = []

    def until(
        self, done: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 15.0
    ) -> list[dict[str, Any]]:
        """Take events until the queue is empty and ``done`` holds (or the time is up): the events so far."""
        deadline = time.monotonic() + timeout_s
        with polling():  # how many rounds until an event shows is timing
            while time.monotonic() < deadline:
                method, properties, _ = self.watch.basic_get(self.capture, auto_ack=True)
                if method is not None:
                    self.events.append(self.normaliser.event(method, properties))
                elif done(self.events):
                    break
                else:
                    self.watcher.sleep(0.05)
        return self.events
