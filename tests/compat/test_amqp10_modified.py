"""The modified outcome on each queue type, as RabbitMQ 4.0.5 applies it (WarrenMQ under ``--profile
rabbitmq-4.0`` and the 4.0.5 node): a quorum queue counts delivery-failed in the next transfer's header
delivery-count and merges the outcome's message annotations into the message, requeued or dead-lettered
(a 0-9-1 consumer reads them as headers); a classic queue does neither. undeliverable-here dead-letters on
both; every return counts toward a quorum queue's x-delivery-limit; a key without ``x-`` ends the session."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from proton import Message as ProtonMessage
from proton.utils import BlockingConnection

from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Modified, Released
from protocol.amqp10.message import Message
from protocol.amqp10.performatives import Disposition, End
from protocol.amqp10.sections import AmqpValue, Header
from protocol.amqp10.types import Symbol
from tests.compat.amqp10_support import (
    BROKERS,
    RawClient,
    attach_receiver,
    broker_port,
    credit,
    deliveries,
    pika_channel,
    proton_url,
)

pytestmark = pytest.mark.compat

ANNOTATIONS = {Symbol("x-opt-reason"): "retry", Symbol("x-attempt"): 2}
MERGED = {"x-opt-reason": "retry", "x-attempt": 2}


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


@pytest.fixture
def declared(port: int) -> Iterator[Any]:
    """A pika channel; the queues declared through ``declare`` (with ``<queue>-dlq``) go at the end."""
    channel = pika_channel(port)
    channel.confirm_delivery()
    names: list[str] = []

    def declare(queue_type: str, **arguments: Any) -> str:
        name = f"amqp10-mod-{uuid.uuid4().hex[:8]}"
        channel.queue_declare(f"{name}-dlq", durable=True)
        arguments = {
            "x-queue-type": queue_type,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": f"{name}-dlq",
            **arguments,
        }
        channel.queue_declare(name, durable=True, arguments=arguments)
        channel.basic_publish("", name, b"body", pika.BasicProperties(headers={"h": 1}, delivery_mode=2))
        names.append(name)
        return name

    yield declare
    for name in names:
        channel.queue_delete(name)
        channel.queue_delete(f"{name}-dlq")
    channel.connection.close()


def _receiver(port: int, queue: str) -> RawClient:
    client = RawClient(port)
    client.login()
    client.begin()
    attach_receiver(client, queue)
    credit(client, 10)
    return client


def _next(client: RawClient) -> tuple[int, Message]:
    """The next transfer's delivery-id and message."""
    ((transfer, message),) = deliveries(client.read_count(1))
    assert transfer.delivery_id is not None
    return transfer.delivery_id, message


def _settle(client: RawClient, delivery_id: int, outcome: Modified | Released) -> None:
    client.perform(Disposition(role=True, first=delivery_id, settled=True, state=outcome))


def _header(message: Message) -> tuple[bool | None, int | None]:
    header = message.header
    assert isinstance(header, Header)
    return header.first_acquirer, header.delivery_count


def _annotated(message: Message) -> dict[str, Any]:
    """The outcome's annotations found in ``message``'s message annotations."""
    assert message.message_annotations is not None
    found = message.message_annotations.value
    return {str(key): found[key] for key in ANNOTATIONS if key in found}


def _get(port: int, queue: str, deadline_s: float = 10.0) -> dict[str, Any]:
    """The headers of the next message of ``queue`` over 0-9-1 (waited for)."""
    channel = pika_channel(port)
    deadline = time.monotonic() + deadline_s
    try:
        while True:
            method, properties, _ = channel.basic_get(queue, auto_ack=True)
            if method is not None:
                return dict(properties.headers or {})
            assert time.monotonic() < deadline, f"nothing in {queue}"
            time.sleep(0.05)
    finally:
        channel.connection.close()


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
@pytest.mark.parametrize("delivery_failed", [True, False])
def test_modified_requeues_with_count_and_annotations_on_a_quorum_queue(
    port: int, declared: Any, queue_type: str, delivery_failed: bool
) -> None:
    queue = declared(queue_type)
    client = _receiver(port, queue)
    first, _ = _next(client)
    _settle(client, first, Modified(delivery_failed=delivery_failed, message_annotations=ANNOTATIONS))
    second, again = _next(client)
    _settle(client, second, Modified(delivery_failed=delivery_failed))
    third, once_more = _next(client)
    _settle(client, third, Released())
    client.close()
    headers = _get(port, queue)
    quorum = queue_type == "quorum"
    failures = 1 if quorum and delivery_failed else 0
    assert _header(again) == (False, failures)
    assert _header(once_more) == (False, 2 * failures)  # a release is not a failed delivery
    assert _annotated(again) == (MERGED if quorum else {})
    assert _annotated(once_more) == (MERGED if quorum else {})
    assert {key: headers[key] for key in MERGED if key in headers} == (MERGED if quorum else {})


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
def test_undeliverable_here_dead_letters_with_the_annotations_of_a_quorum_queue(
    port: int, declared: Any, queue_type: str
) -> None:
    queue = declared(queue_type)
    client = _receiver(port, queue)
    first, _ = _next(client)
    outcome = Modified(delivery_failed=False, undeliverable_here=True, message_annotations=ANNOTATIONS)
    _settle(client, first, outcome)
    dead = _get(port, f"{queue}-dlq")
    client.close()
    assert dead["x-first-death-reason"] == "rejected"
    assert {key: dead[key] for key in MERGED if key in dead} == (MERGED if queue_type == "quorum" else {})


def test_every_modified_counts_toward_the_delivery_limit(port: int, declared: Any) -> None:
    """x-delivery-limit 1: the second return dead-letters, delivery-failed or not, the annotations kept."""
    queue = declared("quorum", **{"x-delivery-limit": 1})
    client = _receiver(port, queue)
    first, _ = _next(client)
    _settle(client, first, Modified(delivery_failed=False, message_annotations=ANNOTATIONS))
    second, again = _next(client)
    _settle(client, second, Modified(delivery_failed=False))
    dead = _get(port, f"{queue}-dlq")
    client.close()
    assert _header(again) == (False, 0)
    assert dead["x-first-death-reason"] == "delivery_limit"
    assert {key: dead[key] for key in MERGED} == MERGED


@pytest.mark.parametrize("key", [Symbol("no-prefix"), "x-a-string-key"])
def test_an_annotation_key_4_0_5_cannot_take_ends_the_session(port: int, declared: Any, key: Any) -> None:
    """A key that is not an ``x-`` symbol: 4.0.5's session crashes (amqp:internal-error, with its stack trace
    as the description) before settling, so the message goes back to the queue when the session ends."""
    queue = declared("quorum")
    client = _receiver(port, queue)
    first, _ = _next(client)
    _settle(client, first, Modified(delivery_failed=True, message_annotations={key: "v"}))
    ended = [item[1] for item in client.read_count(1) if isinstance(item, tuple)]
    client.close()
    headers = _get(port, queue)
    assert len(ended) == 1
    assert isinstance(ended[0], End), ended
    assert isinstance(ended[0].error, Error), ended
    assert ended[0].error.condition == "amqp:internal-error"
    assert headers["x-delivery-count"] == 1
    assert "v" not in headers.values()


def test_a_message_published_over_amqp10_keeps_its_form_through_quorum_returns(
    port: int, declared: Any
) -> None:
    """Returned to a quorum queue (modified, then released), a 1.0 message comes back as published (its
    properties and amqp-value body), its annotations and the outcome's (compound values too) beside
    x-delivery-count."""
    queue = declared("quorum")
    _get(port, queue)  # the fixture's 0-9-1 message out of the way
    annotations = {Symbol("x-opt-list"): [1, "two"], Symbol("x-opt-reason"): "retry"}
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        sender = connection.create_sender(f"/queues/{queue}")
        published = ProtonMessage(body={"k": 1}, subject="subject", annotations={Symbol("x-opt-p"): "p"})
        sender.send(published)
    finally:
        connection.close()
    client = _receiver(port, queue)
    first, _ = _next(client)
    _settle(client, first, Modified(delivery_failed=True, message_annotations=annotations))
    second, again = _next(client)
    _settle(client, second, Released())
    _, once_more = _next(client)
    client.close()
    for message, returns in ((again, 1), (once_more, 2)):
        assert message.properties is not None
        assert message.properties.subject == "subject"
        assert message.body == (AmqpValue({"k": 1}),)
        assert message.message_annotations is not None
        found = message.message_annotations.value
        assert found[Symbol("x-opt-p")] == "p"
        assert found[Symbol("x-delivery-count")] == returns
        assert {key: found.get(key) for key in annotations} == annotations
    assert (_header(again), _header(once_more)) == ((False, 1), (False, 1))
