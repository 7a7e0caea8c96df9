"""What every differential scenario uses: the scenario table, ``Ctx`` (connections and unique names on one
broker), the observation helpers (``outcome``, ``drain``, ``bodies``, ``Deliveries``), waits that pump the
client connection, and ``normalise`` / ``run_scenario``.

Each scenario takes a ``Ctx`` (a broker URL plus a unique name prefix) and returns a plain JSON-able
observation of what a pika client saw: messages per queue, reply codes and texts, declare-ok counts,
redelivered flags, delivery order, get-ok message counts. ``run_scenario`` runs one and normalises what
differs between runs (the prefix, server-generated ``amq.gen-*`` / ``amq.ctag-*`` names), so the observation
from WarrenMQ can be compared for equality with the one from RabbitMQ.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

import pika
import pika.exceptions

Observation = Any
Scenario = Callable[["Ctx"], Observation]

SCENARIOS: dict[str, Scenario] = {}
SETTLE_S = 0.3  # window in which deliveries that must not happen would have shown up


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


class Ctx:
    """Connections to one broker for one scenario run, with names made unique by ``prefix``."""

    def __init__(self, url: str, prefix: str) -> None:
        parsed = urlparse(url)
        self.prefix = prefix
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 5672
        self.vhost = (parsed.path[1:] or "/") if parsed.path else "/"
        self.username = parsed.username or "guest"
        self.password = parsed.password or "guest"
        self.connections: list[pika.BlockingConnection] = []
        self.exchanges: list[str] = []
        self.queues: list[str] = []

    def params(self, **overrides: Any) -> pika.ConnectionParameters:
        settings: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "virtual_host": self.vhost,
            "credentials": pika.PlainCredentials(self.username, self.password),
            "connection_attempts": 1,
            "socket_timeout": 5,
            "stack_timeout": 10,
        }
        settings.update(overrides)
        return pika.ConnectionParameters(**settings)

    def connect(self, **overrides: Any) -> pika.BlockingConnection:
        connection = pika.BlockingConnection(self.params(**overrides))
        self.connections.append(connection)
        return connection

    def channel(self, confirm: bool = False) -> Any:
        connection = (
            self.connections[0] if self.connections and self.connections[0].is_open else self.connect()
        )
        ch = connection.channel()
        if confirm:
            ch.confirm_delivery()
        return ch

    def name(self, suffix: str) -> str:
        return f"{self.prefix}-{suffix}"

    def exchange(self, ch: Any, suffix: str, kind: str = "direct", **kwargs: Any) -> str:
        name = self.name(suffix)
        ch.exchange_declare(name, kind, **kwargs)
        self.exchanges.append(name)
        return name

    def queue(self, ch: Any, suffix: str = "", **kwargs: Any) -> str:
        """Declare a queue (exclusive unless told otherwise); an empty suffix means server-named."""
        kwargs.setdefault("exclusive", True)
        name: str = ch.queue_declare(self.name(suffix) if suffix else "", **kwargs).method.queue
        if not kwargs["exclusive"]:
            self.queues.append(name)
        return name

    def close(self) -> None:
        tell_phase("cleanup")
        if self.exchanges or self.queues:
            connection = pika.BlockingConnection(self.params())
            for name in self.queues:
                connection.channel().queue_delete(name)
            for name in self.exchanges:
                connection.channel().exchange_delete(name)
            connection.close()
        for connection in self.connections:
            if connection.is_open:
                try:
                    connection.close()
                except pika.exceptions.AMQPError:
                    pass


def outcome(fn: Callable[[], object]) -> Observation:
    """ "ok", or the channel/connection error the broker answered with."""
    try:
        fn()
    except pika.exceptions.ChannelClosedByBroker as exc:
        return {"channel_error": [exc.reply_code, exc.reply_text]}
    except pika.exceptions.ConnectionClosedByBroker as exc:
        return {"connection_error": [exc.reply_code, exc.reply_text]}
    except pika.exceptions.ProbableAuthenticationError as exc:
        return {"auth_error": str(exc)}
    except pika.exceptions.ProbableAccessDeniedError as exc:
        return {"access_denied": str(exc)}
    except pika.exceptions.UnroutableError as exc:
        return {
            "unroutable": [[m.method.reply_code, m.method.reply_text, m.body.decode()] for m in exc.messages]
        }
    return "ok"


def drain(ch: Any, queue: str) -> list[Observation]:
    """basic.get (auto-ack) until empty: [body, redelivered, message_count] per message."""
    out: list[Observation] = []
    for _ in range(10_000):
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append([body.decode(), method.redelivered, method.message_count])
    raise AssertionError("queue did not run empty")


def bodies(ch: Any, queue: str) -> list[str]:
    return [entry[0] for entry in drain(ch, queue)]


# Told the phase a scenario run is in: "poll" while it repeats a request until the answer changes
# (``polling``), "racy" in a part whose frames depend on timing (``timing_dependent``), "cleanup" once
# ``Ctx.close`` starts deleting what it declared, "scenario" otherwise. The frame harness
# (tests/compat/frames) leaves polls, racy parts and cleanup out of its transcripts: how many rounds a poll
# takes, and which notifications a deletion races with the closing connections, depend on timing.
PHASE_LISTENERS: list[Callable[[str], None]] = []


def tell_phase(phase: str) -> None:
    for listener in PHASE_LISTENERS:
        listener(phase)


@contextmanager
def polling() -> Iterator[None]:
    tell_phase("poll")
    try:
        yield
    finally:
        tell_phase("scenario")


@contextmanager
def timing_dependent() -> Iterator[None]:
    """A part of a scenario whose frames depend on timing on RabbitMQ itself (its observation must not)."""
    tell_phase("racy")
    try:
        yield
    finally:
        tell_phase("scenario")


def pump(connection: pika.BlockingConnection, done: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        connection.process_data_events(time_limit=min(0.05, remaining))
    return True


def pump_for(connection: pika.BlockingConnection, duration_s: float) -> None:
    deadline = time.monotonic() + duration_s
    while (remaining := deadline - time.monotonic()) > 0:
        connection.process_data_events(time_limit=min(0.05, remaining))


class Deliveries:
    def __init__(self) -> None:
        self.items: list[tuple[str, int, bool, str]] = []

    def __call__(self, _ch: Any, method: Any, _props: Any, body: bytes) -> None:
        self.items.append((method.consumer_tag, method.delivery_tag, method.redelivered, body.decode()))

    def __len__(self) -> int:
        return len(self.items)


_GENERATED = re.compile(r"amq\.(gen|ctag)-[A-Za-z0-9_\-]+")


def normalise(observation: Observation, prefix: str) -> Observation:
    text = json.dumps(observation, sort_keys=True).replace(prefix, "P")
    seen: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        key = match.group(0)
        if key not in seen:
            seen[key] = (
                f"amq.{match.group(1)}-#{sum(1 for v in seen if v.startswith('amq.' + match.group(1)))}"
            )
        return seen[key]

    return json.loads(_GENERATED.sub(rename, text))


def new_prefix() -> str:
    return f"cmp{uuid.uuid4().hex[:10]}"


def run_scenario(url: str, name: str, prefix: str | None = None) -> Observation:
    """Run scenario ``name`` against ``url`` with unique names (``prefix``, else a fresh one); normalised."""
    prefix = prefix or new_prefix()
    ctx = Ctx(url, prefix)
    try:
        observation = SCENARIOS[name](ctx)
    finally:
        ctx.close()
    return normalise(observation, prefix)


def confirming_queue(
    ctx: Ctx, connection: pika.BlockingConnection, count: int = 0, suffix: str = ""
) -> tuple[Any, str]:
    """A confirming channel and an exclusive queue (server-named unless ``suffix``) holding ``m0`` ..
    ``m{count-1}``."""
    ch = connection.channel()
    ch.confirm_delivery()
    q = ctx.queue(ch, suffix)
    for i in range(count):
        ch.basic_publish("", q, f"m{i}".encode())
    return ch, q


def get_tags(ch: Any, q: str, count: int) -> list[int]:
    """basic.get (manual ack) ``count`` times: the delivery tags."""
    return [ch.basic_get(q)[0].delivery_tag for _ in range(count)]


def consume_until(connection: pika.BlockingConnection, ch: Any, q: str, count: int) -> Deliveries:
    """basic.consume (manual ack, tag ``c``) on ``q`` and pump until ``count`` deliveries arrived."""
    seen = Deliveries()
    ch.basic_consume(q, seen, consumer_tag="c")
    pump(connection, lambda: len(seen) == count)
    return seen


class Attempts:
    """Calls each on a fresh channel of one connection and records its ``outcome`` under a label."""

    def __init__(self, connection: pika.BlockingConnection) -> None:
        self.connection = connection
        self.results: dict[str, Observation] = {}

    def __call__(self, label: str, fn: Callable[[Any], object]) -> None:
        self.results[label] = outcome(lambda: fn(self.connection.channel()))
