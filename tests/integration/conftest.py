"""Integration-suite fixtures: pika connections, raw AMQP sockets, cleanup of named entities."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.conftest import url_pika_params

from .raw_amqp import RawAMQP

ConnectFactory = Callable[..., pika.BlockingConnection]
RawFactory = Callable[[], RawAMQP]


@pytest.fixture
def pika_params(amqp_params: dict[str, Any]) -> pika.ConnectionParameters:
    """pika parameters for the broker under test, with short timeouts so that nothing can hang a test."""
    return make_pika_params(amqp_params)


def make_pika_params(amqp_params: dict[str, Any], **overrides: Any) -> pika.ConnectionParameters:
    settings: dict[str, Any] = {
        "host": amqp_params["host"],
        "port": amqp_params["port"],
        "virtual_host": amqp_params["vhost"],
        "credentials": pika.PlainCredentials(amqp_params["username"], amqp_params["password"]),
        "connection_attempts": 1,
        "socket_timeout": 5,
        "stack_timeout": 10,
        "blocked_connection_timeout": 10,
    }
    settings.update(overrides)
    return pika.ConnectionParameters(**settings)


@pytest.fixture
def connect(amqp_params: dict[str, Any]) -> Iterator[ConnectFactory]:
    """Open pika BlockingConnections (keywords override ConnectionParameters); all closed after the test."""
    opened: list[pika.BlockingConnection] = []

    def factory(**overrides: Any) -> pika.BlockingConnection:
        connection = pika.BlockingConnection(make_pika_params(amqp_params, **overrides))
        opened.append(connection)
        return connection

    yield factory
    for connection in opened:
        if connection.is_open:
            try:
                connection.close()
            except pika.exceptions.AMQPError:
                pass


@pytest.fixture
def connection(connect: ConnectFactory) -> pika.BlockingConnection:
    return connect()


@pytest.fixture
def channel(connection: pika.BlockingConnection) -> Any:
    """A BlockingChannel on ``connection``."""
    return connection.channel()


@pytest.fixture
def raw(amqp_params: dict[str, Any]) -> Iterator[RawFactory]:
    """Open raw pamqp sockets (not yet handshaken); all closed after the test."""
    opened: list[RawAMQP] = []

    def factory() -> RawAMQP:
        client = RawAMQP(str(amqp_params["host"]), int(amqp_params["port"]))
        opened.append(client)
        return client

    yield factory
    for client in opened:
        client.close()


class Janitor:
    """Deletes the durable or shared entities a test registers, through its own connection, after the test."""

    def __init__(self) -> None:
        self.queues: list[str] = []
        self.exchanges: list[str] = []

    def queue(self, name: str) -> str:
        self.queues.append(name)
        return name

    def exchange(self, name: str) -> str:
        self.exchanges.append(name)
        return name

    def declare_queue(self, ch: Any, name: str, **kwargs: Any) -> str:
        """queue.declare ``name`` on ``ch`` (keywords as pika's) and delete it after the test."""
        ch.queue_declare(self.queue(name), **kwargs)
        return name

    def declare_exchange(self, ch: Any, name: str, *args: Any, **kwargs: Any) -> str:
        """exchange.declare ``name`` on ``ch`` (type and keywords as pika's) and delete it after the test."""
        ch.exchange_declare(self.exchange(name), *args, **kwargs)
        return name


@pytest.fixture
def janitor(amqp_params: dict[str, Any]) -> Iterator[Janitor]:
    jan = Janitor()
    yield jan
    if not jan.queues and not jan.exchanges:
        return
    connection = pika.BlockingConnection(make_pika_params(amqp_params))
    try:
        for names, delete in ((jan.queues, "queue_delete"), (jan.exchanges, "exchange_delete")):
            for name in names:
                ch = connection.channel()
                try:
                    getattr(ch, delete)(name)
                    ch.close()
                except pika.exceptions.ChannelClosedByBroker:
                    pass
    finally:
        connection.close()


@pytest.fixture(scope="session")
def server_properties(amqp_url: str) -> dict[str, Any]:
    """The server-properties table of the broker under test (read once)."""
    connection = pika.BlockingConnection(url_pika_params(amqp_url))
    try:
        props: dict[str, Any] = dict(connection._impl.server_properties)
    finally:
        connection.close()
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in props.items()}


@pytest.fixture(scope="session")
def rabbitmq_oracle_version(server_properties: dict[str, Any]) -> tuple[int, ...] | None:
    """(major, minor, patch) when the target is a real RabbitMQ (the external oracle), else None.

    WarrenMQ reports product "RabbitMQ" and the emulated version too; its extra warrenmq_version tells it
    apart."""
    if server_properties.get("product") != "RabbitMQ" or "warrenmq_version" in server_properties:
        return None
    try:
        return tuple(int(part) for part in str(server_properties.get("version", "")).split(".")[:3])
    except ValueError:
        return None


@pytest.fixture
def skip_on_rabbitmq_before_3_13(rabbitmq_oracle_version: tuple[int, ...] | None) -> None:
    """Skip a test encoding RabbitMQ 3.13 behaviour when the oracle is an older RabbitMQ (Debian's 3.10)."""
    if rabbitmq_oracle_version is not None and rabbitmq_oracle_version < (3, 13):
        version = ".".join(map(str, rabbitmq_oracle_version))
        pytest.skip(f"encodes RabbitMQ 3.13 behaviour; the external oracle is RabbitMQ {version}")
