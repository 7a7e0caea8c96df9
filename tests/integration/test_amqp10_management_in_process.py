"""The `/management` node (HTTP over AMQP 1.0) against a broker embedded in the test process
(``BrokerThread(profile="rabbitmq-4.0")``), through rabbitmq-amqp-python-client and raw frames. The
differential tests (tests/compat/test_amqp10_management.py, test_amqp10_python_client.py) hold these answers
to RabbitMQ 4.0.5 on a broker process; these run the same paths where coverage traces them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from broker.testing.embed import BrokerThread
from protocol.amqp10.types import ULong
from tests.compat.amqp10_support import ManagementPair, RawClient, pika_channel

client = pytest.importorskip(
    "rabbitmq_amqp_python_client", reason="rabbitmq-amqp-python-client (the dev extra) is not installed"
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerThread]:
    with BrokerThread(profile="rabbitmq-4.0") as running:
        yield running


@pytest.fixture
def management(broker: BrokerThread) -> Iterator[ManagementPair]:
    raw = RawClient(broker.port)
    raw.login()
    raw.begin()
    try:
        yield ManagementPair(raw)
    finally:
        raw.close()


def test_the_python_client_declares_binds_publishes_and_deletes(broker: BrokerThread) -> None:
    name = f"in-process-{uuid.uuid4().hex[:8]}"
    environment = client.Environment(f"amqp://guest:guest@127.0.0.1:{broker.port}/")
    try:
        connection = environment.connection()
        connection.dial()
        management = connection.management()
        management.declare_queue(client.QuorumQueueSpecification(name=name))
        management.declare_exchange(
            client.ExchangeSpecification(name=f"{name}-x", exchange_type=client.ExchangeType.topic)
        )
        path = management.bind(
            client.ExchangeToQueueBindingSpecification(
                source_exchange=f"{name}-x", destination_queue=name, binding_key="a.*"
            )
        )
        publisher = connection.publisher(client.AddressHelper.exchange_address(f"{name}-x", "a.b"))
        publisher.publish(client.Message(body=b"routed"))
        publisher.close()
        info = management.queue_info(name)
        assert (info.queue_type, info.message_count) == (client.QueueType.quorum, 1)
        assert management.purge_queue(name) == 1
        management.unbind(path)
        management.delete_exchange(f"{name}-x")
        management.delete_queue(name)
        with pytest.raises(client.ValidationCodeException):
            management.queue_info(name)
    finally:
        environment.close()


def test_requests_and_refusals(broker: BrokerThread, management: ManagementPair) -> None:
    name = f"in-process-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(broker.port)
    channel.queue_declare(f"{name}-locked", exclusive=True)
    try:
        statuses = [
            management.request(method, to, body)[0]
            for method, to, body in [
                ("PUT", f"/queues/{name}", {"arguments": {"x-max-length": 3, "x-dead-letter-exchange": "x"}}),
                ("PUT", f"/queues/{name}", {"durable": False}),
                ("PUT", f"/queues/{name}", {"bogus": 1}),
                ("PUT", "/queues/amq.q", {}),
                ("PUT", "/queues/", {}),
                ("PUT", f"/queues/{name}-locked", {"exclusive": True}),
                ("PUT", f"/queues/{name}-mine", {"exclusive": True, "durable": False}),
                ("GET", f"/queues/{name}-mine", None),
                ("PUT", f"/exchanges/{name}-x", {"type": "fanout", "arguments": {"k": "v"}}),
                ("PUT", f"/exchanges/{name}-x", {"type": "direct"}),
                ("PUT", f"/exchanges/{name}-y", {"type": "no-such-type"}),
                ("PUT", f"/exchanges/{name}-y", {"internal": "yes"}),
                ("DELETE", "/exchanges/amq.fanout", None),
                (
                    "POST",
                    "/bindings",
                    {
                        "source": f"{name}-x",
                        "destination_queue": name,
                        "binding_key": "k",
                        "arguments": {"a": 1, "b": [1, "two"], "c": {"d": True}},
                    },
                ),
                (
                    "POST",
                    "/bindings",
                    {
                        "source": "amq.fanout",
                        "destination_exchange": f"{name}-x",
                        "binding_key": "",
                        "arguments": {},
                    },
                ),
                (
                    "POST",
                    "/bindings",
                    {
                        "source": f"{name}-x",
                        "destination_queue": "missing",
                        "binding_key": "",
                        "arguments": {},
                    },
                ),
                ("POST", "/bindings", {"source": f"{name}-x", "bogus": 1}),
                ("GET", f"/bindings?src=amq.fanout&dste={name}-x&key=", None),
                ("GET", "/bindings?src=amq.fanout&key=", None),
                ("DELETE", f"/bindings/src=amq.fanout;dste={name}-x;key=;args=", None),
                ("DELETE", "/bindings/nonsense", None),
                ("DELETE", f"/queues/{name}/messages", None),
                ("DELETE", f"/queues/{name}-locked/messages", None),
                ("DELETE", f"/queues/{name}", None),
                ("DELETE", f"/exchanges/{name}-x", None),
            ]
        ]
        assert statuses == [
            "201", "409", "400", "403", "400", "400", "201", "200", "204", "409", "400", "400", "403",
            "204", "204", "400", "400", "200", "400", "204", "400", "200", "400", "200", "204",
        ]  # fmt: skip
        listing = management.request("GET", f"/bindings?src={name}-x&dstq={name}&key=k")[1]
        assert listing == []  # the queue was deleted, and its bindings with it
    finally:
        channel.queue_delete(f"{name}-locked")
        channel.connection.close()
    assert management.ended("GET", "/queues/x", settled=False)[0] == "amqp:internal-error"


def test_a_bound_queue_is_unbound_by_its_location(broker: BrokerThread, management: ManagementPair) -> None:
    name = f"in-process-{uuid.uuid4().hex[:8]}"
    management.request("PUT", f"/queues/{name}", {})
    binding = {"source": "amq.direct", "destination_queue": name, "binding_key": "k", "arguments": {"x": 1}}
    assert management.request("POST", "/bindings", binding) == ("204", None)
    (listed,) = management.request("GET", f"/bindings?src=amq.direct&dstq={name}&key=k")[1]
    assert not listed["location"].endswith(";args=")  # the arguments' hash
    assert management.request("DELETE", listed["location"]) == ("204", None)
    assert management.request("GET", f"/bindings?src=amq.direct&dstq={name}&key=k") == ("200", [])
    assert management.request("DELETE", f"/queues/{name}") == ("200", {"message_count": ULong(0)})


def test_refused_permission_and_the_link_pair_rules(broker: BrokerThread) -> None:
    broker.call(broker.broker.save_user, "limited", "guest", None, ())
    broker.call(broker.broker.access.set_permission, "limited", "/", "^$", "^$", "^$")
    raw = RawClient(broker.port)
    raw.login(response=b"\0limited\0guest")
    raw.begin()
    pair = ManagementPair(raw)
    condition, text = pair.ended("PUT", "/queues/refused", {})
    assert (condition, text) == (
        "amqp:unauthorized-access",
        "configure access to queue 'refused' in vhost '/' refused for user 'limited'",
    )
    raw.close()
    raw = RawClient(broker.port)
    raw.login()
    raw.begin()
    no_credit = ManagementPair(raw, credit=0)
    assert no_credit.ended("GET", "/queues/x")[0] == "amqp:precondition-failed"
    raw.close()
