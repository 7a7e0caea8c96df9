"""Consumer acknowledgement timeout on a ManualClock: 406 with RabbitMQ's text, messages requeued."""

from __future__ import annotations

from pamqp import commands

from broker.core.model.profile import PROFILES
from broker.session.config import SessionConfig
from tests.component.features import TimedClient
from tests.component.harness import close_of

TEXT = (
    "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 10000 ms. "
    "This timeout value can be configured, see consumers doc guide to learn more"
)


def _client(timeout_ms: int = 10_000, profile: str = "rabbitmq-3.13") -> TimedClient:
    return TimedClient(PROFILES[profile], SessionConfig(consumer_timeout_ms=timeout_ms))


def _consume_one(client: TimedClient, queue: str = "q", **arguments: object) -> None:
    client.declare(queue, **arguments)
    client.publish(1, b"held", queue)
    client.send(1, commands.Basic.Consume(queue=queue, consumer_tag="c"))
    client.received()


def test_unacked_delivery_past_the_timeout_closes_the_channel_with_406() -> None:
    client = _client()
    _consume_one(client)
    client.advance(9.0)
    assert client.received() == []
    client.advance(2.5)  # a tick (timeout / 10) after the deadline at the latest
    assert close_of(client.received()) == (1, 406, TEXT)


def test_the_timed_out_delivery_is_requeued_and_redelivered() -> None:
    client = _client()
    _consume_one(client)
    client.advance(12.0)
    client.received()
    client.send(1, commands.Channel.CloseOk())
    client.open_channel(2)
    got = client.get("q", channel=2)
    assert got is not None
    assert got[0].redelivered is True


def test_acking_in_time_keeps_the_channel_open() -> None:
    client = _client()
    _consume_one(client)
    client.advance(9.0)
    client.send(1, commands.Basic.Ack(delivery_tag=1))
    client.advance(30.0)
    assert client.received() == []


def test_a_later_delivery_gets_its_own_full_timeout() -> None:
    client = _client()
    _consume_one(client)
    client.send(1, commands.Basic.Ack(delivery_tag=1))
    client.advance(8.0)
    client.publish(1, b"second", "q")
    client.received()
    client.advance(9.0)  # 17 s after the first delivery, 9 s after the second
    assert client.received() == []
    client.advance(2.5)
    assert close_of(client.received())[1] == 406


def test_no_ack_consumers_and_a_zero_timeout_are_never_timed_out() -> None:
    client = _client()
    client.declare("q")
    client.publish(1, b"auto", "q")
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c", no_ack=True))
    client.advance(60.0)
    assert not any(isinstance(v, commands.Channel.Close) for _, v in client.received())
    off = _client(timeout_ms=0)
    _consume_one(off)
    off.advance(3600.0)
    assert off.received() == []


def test_rabbitmq_43_checks_quorum_queues_only() -> None:
    classic = _client(profile="rabbitmq-4.3")
    _consume_one(classic, durable=True)  # 4.3 refuses transient non-exclusive queues
    classic.advance(60.0)
    assert classic.received() == []
    quorum = _client(profile="rabbitmq-4.3")
    _consume_one(quorum, "qq", durable=True, **{"x-queue-type": "quorum"})
    quorum.advance(12.0)
    assert close_of(quorum.received())[1] == 406


def test_profiles_before_43_check_classic_queues() -> None:
    for profile in ("rabbitmq-3.13", "rabbitmq-4.0"):
        client = _client(profile=profile)
        _consume_one(client)
        client.advance(12.0)
        assert close_of(client.received())[1] == 406
