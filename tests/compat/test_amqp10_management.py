"""RabbitMQ 4's `/management` node over AMQP 1.0 (HTTP over AMQP, v2 paths): the link pair, requests for
queues, exchanges, bindings and purges, and their refusals. Each case sends the same requests to WarrenMQ
(--profile rabbitmq-4.0) and to RabbitMQ 4.0.5 (skipped with the reason when podman or its image is
missing); the expected values are 4.0.5's, after ``normalised`` (the one place where what must differ is
made equal)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from protocol.amqp10.condition import Error
from protocol.amqp10.performatives import Attach, End, Flow, Transfer
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Array, Int, UByte, UInt, ULong
from tests.compat.amqp10_support import (
    BROKERS,
    ManagementPair,
    RawClient,
    broker_http_url,
    broker_port,
    performatives,
    pika_channel,
    user_with_permissions,
)

pytestmark = pytest.mark.compat

NODE = "<node>"


def normalised(value: Any) -> Any:
    """A reply with what must differ made equal: the node's name (leader and replicas)."""
    if not isinstance(value, dict):
        return value
    result = dict(value)
    if "leader" in result:
        result["leader"] = NODE
    if isinstance(result.get("replicas"), Array):
        result["replicas"] = [NODE for _ in result["replicas"].items]
    return result


def queue_map(name: str, **overrides: Any) -> dict[str, Any]:
    """4.0.5's queue map, normalised: a durable classic queue unless ``overrides`` say otherwise."""
    reply = {
        "leader": NODE,
        "replicas": [NODE],
        "message_count": ULong(0),
        "consumer_count": UInt(0),
        "name": name,
        "vhost": "/",
        "durable": True,
        "auto_delete": False,
        "exclusive": False,
        "type": "classic",
        "arguments": {"x-queue-type": "classic"},  # 4.0's inject_dqt
    }
    reply.update(overrides)
    return reply


@pytest.fixture(params=BROKERS)
def which(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def port(request: pytest.FixtureRequest, which: str) -> int:
    return broker_port(request, which)


def _pair(port: int, user: str = "guest", credit: int = 100) -> ManagementPair:
    client = RawClient(port)
    client.login(response=f"\0{user}\0{'guest' if user == 'guest' else 'pw'}".encode())
    client.begin()
    return ManagementPair(client, credit)


@pytest.fixture
def management(port: int) -> Iterator[ManagementPair]:
    pair = _pair(port)
    try:
        yield pair
    finally:
        pair.client.close()


@pytest.fixture
def name(port: int) -> Iterator[str]:
    """A fresh name; queues and exchanges named after it are deleted afterwards (over AMQP 0-9-1)."""
    base = f"mgmt-{uuid.uuid4().hex[:10]}"
    yield base
    channel = pika_channel(port)
    for suffix in ("", "-qq", "-stream", "-excl", "-args"):
        channel.queue_delete(base + suffix)
    for suffix in ("-x", "-x2"):
        channel.exchange_delete(base + suffix)
    channel.connection.close()


def _request(management: ManagementPair, method: str, to: str, body: Any = None) -> tuple[str, Any]:
    status, reply = management.request(method, to, body)
    return status, normalised(reply)


def test_link_pair_attach(management: ManagementPair) -> None:
    """The sender half is answered with 8 credits, both halves settled, the paired property echoed."""
    sender_attach, credit = performatives(management.sender_attached)
    assert sender_attach.role is True  # type: ignore[union-attr]
    assert sender_attach.snd_settle_mode == 1  # type: ignore[union-attr]
    assert sender_attach.properties == {"paired": True}  # type: ignore[union-attr]
    assert isinstance(credit, Flow)
    assert (credit.handle, credit.delivery_count, credit.link_credit) == (0, 0, 8)
    (receiver_attach,) = performatives(management.receiver_attached)
    assert receiver_attach.role is False  # type: ignore[union-attr]
    assert receiver_attach.snd_settle_mode == 1  # type: ignore[union-attr]
    assert receiver_attach.initial_delivery_count == 2**32 - 5  # type: ignore[union-attr]
    assert receiver_attach.properties == {"paired": True}  # type: ignore[union-attr]


def test_queue_lifecycle(port: int, management: ManagementPair, name: str) -> None:
    body = {"durable": True, "exclusive": False, "auto_delete": False, "arguments": {}}
    assert _request(management, "PUT", f"/queues/{name}", body) == ("201", queue_map(name))
    assert _request(management, "PUT", f"/queues/{name}", body) == ("200", queue_map(name))
    channel = pika_channel(port)
    channel.confirm_delivery()
    for body_bytes in (b"a", b"b"):
        channel.basic_publish("", name, body_bytes)
    assert _request(management, "GET", f"/queues/{name}") == ("200", queue_map(name, message_count=ULong(2)))
    assert _request(management, "DELETE", f"/queues/{name}/messages") == ("200", {"message_count": ULong(2)})
    channel.basic_publish("", name, b"c")
    channel.connection.close()
    assert _request(management, "DELETE", f"/queues/{name}") == ("200", {"message_count": ULong(1)})
    assert _request(management, "DELETE", f"/queues/{name}") == ("200", {"message_count": ULong(0)})
    assert _request(management, "GET", f"/queues/{name}") == (
        "404",
        f"queue '{name}' in vhost '/' not found",
    )


def test_queue_types_and_defaults(port: int, management: ManagementPair, name: str) -> None:
    """A body's defaults (durable, not exclusive, not auto-delete), and quorum and stream queues."""
    assert _request(management, "PUT", f"/queues/{name}", {}) == ("201", queue_map(name))
    quorum = {"arguments": {"x-queue-type": "quorum"}}
    assert _request(management, "PUT", f"/queues/{name}-qq", quorum) == (
        "201",
        queue_map(f"{name}-qq", type="quorum", arguments={"x-queue-type": "quorum"}),
    )
    stream = {"arguments": {"x-queue-type": "stream"}}
    assert _request(management, "PUT", f"/queues/{name}-stream", stream) == (
        "201",
        queue_map(f"{name}-stream", type="stream", arguments={"x-queue-type": "stream"}),
    )
    assert _request(management, "GET", f"/queues/{name}-qq")[1]["type"] == "quorum"
    channel = pika_channel(port)
    channel.confirm_delivery()
    channel.basic_publish("", f"{name}-stream", b"logged")
    channel.connection.close()
    # A stream counts 0 messages (rabbit_amqqueue:stat), and cannot be purged.
    assert _request(management, "GET", f"/queues/{name}-stream")[1]["message_count"] == 0
    assert _request(management, "DELETE", f"/queues/{name}-stream/messages") == (
        "400",
        f"purge not supported by queue '{name}-stream' in vhost '/'",
    )
    # An int argument comes back an int, a long a long.
    arguments = {"x-max-priority": Int(5), "x-max-length": 7}
    reply = _request(management, "PUT", f"/queues/{name}-args", {"arguments": arguments})[1]
    assert reply["arguments"] == {**arguments, "x-queue-type": "classic"}
    assert {key: type(value) for key, value in reply["arguments"].items()} == {
        "x-max-priority": Int,
        "x-max-length": int,
        "x-queue-type": str,
    }


def test_queue_refusals(port: int, management: ManagementPair, name: str) -> None:
    channel = pika_channel(port)
    channel.queue_declare(name, durable=True)
    channel.queue_declare(f"{name}-excl", exclusive=True)  # another connection's
    try:
        excl = f"{name}-excl"
        locked = (
            "400",
            f"cannot obtain exclusive access to locked queue '{excl}' in vhost '/'. It could be originally "
            "declared on another connection or the exclusive property value does not match that of the "
            "original declaration.",
        )
        cases: list[tuple[str, str, Any, tuple[str, Any]]] = [
            (
                "PUT",
                f"/queues/{name}",
                {"durable": False},
                (
                    "409",
                    f"inequivalent arg 'durable' for queue '{name}' in vhost '/': received 'false' but "
                    "current is 'true'",
                ),
            ),
            (
                "PUT",
                f"/queues/{name}",
                {"arguments": {"x-max-length": 5}},
                (
                    "409",
                    f"inequivalent arg 'x-max-length' for queue '{name}' in vhost '/': received the value "
                    "'5' of type 'long' but current is none",
                ),
            ),
            (
                "PUT",
                "/queues/amq.foo",
                {},
                ("403", "queue 'amq.foo' in vhost '/' starts with reserved prefix 'amq.'"),
            ),
            ("PUT", "/queues/", {}, ("400", "declare queue with empty name not allowed")),
            (
                "PUT",
                f"/queues/{name}-qq",
                {"arguments": {"x-queue-type": "nonsense"}},
                (
                    "409",
                    f"invalid arg 'x-queue-type' for queue '{name}-qq' in vhost '/': \"unsupported queue "
                    "type 'nonsense'\"",
                ),
            ),
            (
                "PUT",
                f"/queues/{name}-qq",
                {"foo": 1},
                ("400", 'bad queue property {{utf8,<<"foo">>},{long,1}}'),
            ),
            ("PUT", f"/queues/{excl}", {"exclusive": True, "durable": False}, locked),
            ("DELETE", f"/queues/{excl}/messages", None, locked),
            ("DELETE", f"/queues/{excl}", None, locked),
            ("DELETE", f"/queues/{name}-qq/messages", None, ("400", f"no queue '{name}-qq' in vhost '/'")),
        ]
        for method, to, body, expected in cases:
            assert _request(management, method, to, body) == expected, (method, to, body)
        # Another connection's exclusive queue is still shown.
        assert _request(management, "GET", f"/queues/{excl}") == (
            "200",
            queue_map(excl, durable=False, exclusive=True),
        )
    finally:
        channel.connection.close()


def test_exclusive_queue_goes_with_its_connection(port: int, management: ManagementPair, name: str) -> None:
    excl = f"{name}-excl"
    body = {"exclusive": True, "durable": False}
    assert _request(management, "PUT", f"/queues/{excl}", body) == (
        "201",
        queue_map(excl, durable=False, exclusive=True),
    )
    management.client.close()
    other = _pair(port)
    try:
        deadline = time.monotonic() + 10
        while _request(other, "GET", f"/queues/{excl}")[0] != "404":
            assert time.monotonic() < deadline, "the exclusive queue outlived its connection"
            time.sleep(0.05)
    finally:
        other.client.close()


def test_exchanges(management: ManagementPair, name: str) -> None:
    exchange = f"{name}-x"
    cases: list[tuple[str, str, Any, tuple[str, Any]]] = [
        ("PUT", f"/exchanges/{exchange}", {"type": "fanout"}, ("204", None)),
        ("PUT", f"/exchanges/{exchange}", {"type": "fanout", "durable": True}, ("204", None)),
        (
            "PUT",
            f"/exchanges/{exchange}",
            {"type": "direct"},
            (
                "409",
                f"inequivalent arg 'type' for exchange '{exchange}' in vhost '/': received 'direct' but "
                "current is 'fanout'",
            ),
        ),
        ("PUT", f"/exchanges/{name}-x2", {"type": "nonsense"}, ("400", "unknown exchange type 'nonsense'")),
        ("PUT", "/exchanges/amq.direct", {"type": "direct"}, ("204", None)),
        (
            "PUT",
            "/exchanges/amq.foo",
            {"type": "direct"},
            ("403", "exchange 'amq.foo' in vhost '/' starts with reserved prefix 'amq.'"),
        ),
        (
            "DELETE",
            "/exchanges/amq.direct",
            None,
            ("403", "exchange 'amq.direct' in vhost '/' starts with reserved prefix 'amq.'"),
        ),
        ("DELETE", f"/exchanges/{exchange}", None, ("204", None)),
        ("DELETE", f"/exchanges/{exchange}", None, ("204", None)),
    ]
    for method, to, body, expected in cases:
        assert _request(management, method, to, body) == expected, (method, to, body)


def test_bindings(port: int, management: ManagementPair, name: str) -> None:
    exchange = f"{name}-x"
    assert _request(management, "PUT", f"/queues/{name}", {})[0] == "201"
    assert _request(management, "PUT", f"/exchanges/{exchange}", {"type": "direct"})[0] == "204"
    binding = {"source": exchange, "destination_queue": name, "binding_key": "k 1", "arguments": {}}
    assert _request(management, "POST", "/bindings", binding) == ("204", None)
    location = f"/bindings/src={exchange};dstq={name};key=k%201;args="
    listed = {
        "source": exchange,
        "destination_queue": name,
        "binding_key": "k 1",
        "arguments": {},
        "location": location,
    }
    query = f"/bindings?src={exchange}&dstq={name}&key=k%201"
    assert _request(management, "GET", query) == ("200", [listed])
    channel = pika_channel(port)
    channel.confirm_delivery()
    channel.basic_publish(exchange, "k 1", b"routed", mandatory=True)
    assert _request(management, "DELETE", location) == ("204", None)
    assert _request(management, "GET", query) == ("200", [])
    with pytest.raises(pika.exceptions.UnroutableError):
        channel.basic_publish(exchange, "k 1", b"unroutable", mandatory=True)
    channel.connection.close()
    assert _request(management, "GET", f"/queues/{name}")[1]["message_count"] == 1
    # An exchange-to-exchange binding with arguments: its location carries their hash.
    e2e = {
        "source": "amq.direct",
        "destination_exchange": exchange,
        "binding_key": "k",
        "arguments": {"a": 1},
    }
    assert _request(management, "POST", "/bindings", e2e) == ("204", None)
    e2e_location = f"/bindings/src=amq.direct;dste={exchange};key=k;args=Ajat_Q"
    query = f"/bindings?src=amq.direct&dste={exchange}&key=k"
    assert _request(management, "GET", query) == (
        "200",
        [
            {
                "source": "amq.direct",
                "destination_exchange": exchange,
                "binding_key": "k",
                "arguments": {"a": 1},
                "location": e2e_location,
            }
        ],
    )
    # Another hash matches no binding: nothing is removed, and 204 all the same.
    assert _request(management, "DELETE", e2e_location.replace("Ajat_Q", "zzz")) == ("204", None)
    assert len(_request(management, "GET", query)[1]) == 1
    assert _request(management, "DELETE", e2e_location) == ("204", None)
    assert _request(management, "GET", query) == ("200", [])


def test_binding_refusals(management: ManagementPair, name: str) -> None:
    assert _request(management, "PUT", f"/queues/{name}", {})[0] == "201"
    cases: list[tuple[str, str, Any, tuple[str, Any]]] = [
        (
            "POST",
            "/bindings",
            {"source": "amq.direct", "destination_queue": f"{name}-qq", "binding_key": "k", "arguments": {}},
            ("400", f"no queue '{name}-qq' in vhost '/'"),
        ),
        (
            "POST",
            "/bindings",
            {"source": f"{name}-x", "destination_queue": name, "binding_key": "k", "arguments": {}},
            ("400", f"no exchange '{name}-x' in vhost '/'"),
        ),
        (
            "POST",
            "/bindings",
            {"source": "", "destination_queue": name, "binding_key": "k", "arguments": {}},
            ("403", "operation not permitted on the default exchange"),
        ),
        ("DELETE", "/bindings/bad", None, ("400", "bad binding path segment 'bad'")),
        ("DELETE", f"/bindings/src=amq.direct;dstq={name}-qq;key=k;args=", None, ("204", None)),
        ("GET", f"/bindings?src=amq.direct&dstq={name}-qq&key=k", None, ("200", [])),
    ]
    for method, to, body, expected in cases:
        assert _request(management, method, to, body) == expected, (method, to, body)


def test_refused_permissions_end_the_session(request: pytest.FixtureRequest, which: str, port: int) -> None:
    """A refused permission ends the session with amqp:unauthorized-access; reading a queue's map and the
    bindings needs none."""
    channel = pika_channel(port)
    queue = f"mgmt-{uuid.uuid4().hex[:10]}"
    channel.queue_declare(queue)
    binding = {"source": "amq.direct", "destination_queue": queue, "binding_key": "k", "arguments": {}}
    cases: list[tuple[str, str, Any, str]] = [
        ("PUT", f"/queues/{queue}-new", {}, f"configure access to queue '{queue}-new'"),
        ("DELETE", f"/queues/{queue}/messages", None, f"read access to queue '{queue}'"),
        ("DELETE", f"/queues/{queue}", None, f"configure access to queue '{queue}'"),
        ("PUT", f"/exchanges/{queue}-x", {}, f"configure access to exchange '{queue}-x'"),
        ("DELETE", f"/exchanges/{queue}-x", None, f"configure access to exchange '{queue}-x'"),
        ("POST", "/bindings", binding, f"write access to queue '{queue}'"),
        (
            "DELETE",
            f"/bindings/src=amq.direct;dstq={queue};key=k;args=",
            None,
            f"write access to queue '{queue}'",
        ),
    ]
    try:
        with user_with_permissions(broker_http_url(request, which), "^$", "^$", "^$") as user:
            for method, to, body, refused in cases:
                pair = _pair(port, user)
                try:
                    assert pair.ended(method, to, body) == (
                        "amqp:unauthorized-access",
                        f"{refused} in vhost '/' refused for user '{user}'",
                    ), (method, to)
                finally:
                    pair.client.close()
            pair = _pair(port, user)
            try:
                assert _request(pair, "GET", f"/queues/{queue}") == ("200", queue_map(queue, durable=False))
                assert _request(pair, "GET", f"/bindings?src=amq.direct&dstq={queue}&key=k") == ("200", [])
            finally:
                pair.client.close()
    finally:
        channel.queue_delete(queue)
        channel.connection.close()


def test_reply_transfer_and_request_credit(management: ManagementPair) -> None:
    """Replies go settled with an empty tag; the request link's 8 credits are topped up once 4 are spent,
    the flow sent ahead of the fourth reply."""
    for index in range(4):
        management.send("GET", "/queues/mgmt-missing")
        answer = management.reply()
        assert isinstance(answer, tuple), answer
        transfer, message = answer
        assert isinstance(transfer, Transfer)
        assert (transfer.handle, transfer.settled, transfer.delivery_tag) == (1, True, b"")
        assert message.properties is not None
        assert message.properties.subject == "404"
        assert message.properties.correlation_id == f"request-{index}"
    (flow,) = performatives(management.items)
    assert isinstance(flow, Flow)
    assert (flow.handle, flow.delivery_count, flow.link_credit) == (0, 4, 8)


def test_link_pair_rules_end_the_session(port: int) -> None:
    """What 4.0.5 ends the session for: a half without the paired property (amqp:invalid-field), a request
    with no credit to answer on (amqp:precondition-failed), an unsettled request and a path it has no
    clause for (amqp:internal-error, a crash on 4.0.5: its description is not compared)."""
    client = RawClient(port)
    client.login()
    client.begin()
    client.perform(
        Attach(
            name="unpaired",
            handle=UInt(0),
            role=False,
            snd_settle_mode=UByte(1),
            source=Source(address="/management"),
            target=Target(address="/management"),
            initial_delivery_count=UInt(0),
        )
    )
    (end,) = performatives(client.read_count(1))
    assert isinstance(end, End)
    assert isinstance(end.error, Error)
    assert (end.error.condition, end.error.description) == (
        "amqp:invalid-field",
        "Link property 'paired' is not set to boolean value 'true'",
    )
    client.close()
    no_credit = _pair(port, credit=0)
    assert no_credit.ended("GET", "/queues/x") == (
        "amqp:precondition-failed",
        "insufficient credit (0) for management link from RabbitMQ to client",
    )
    no_credit.client.close()
    for method, to, settled in (("GET", "/queues/x", False), ("GET", "/nowhere", True)):
        pair = _pair(port)
        assert pair.ended(method, to, settled=settled)[0] == "amqp:internal-error"
        pair.client.close()
