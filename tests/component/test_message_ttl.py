"""Message TTL and queue expiry on the injectable clock (RabbitMQ ttl.md; 3.10.8-checked where marked)."""

from __future__ import annotations

import pytest
from pamqp import commands

from broker.core.events.events import Fate
from tests.component.features import TimedClient
from tests.component.harness import Recorder, close_of


def test_queue_message_ttl_expires_messages_when_the_clock_passes_it() -> None:
    client = TimedClient()
    client.declare("q", **{"x-message-ttl": 1000})
    client.publish(1, b"a", "q")
    client.advance(0.999)
    assert client.count("q") == 1
    client.advance(0.001)
    assert client.count("q") == 0


@pytest.mark.parametrize(
    ("queue_ttl_ms", "expiration", "lower_s"),
    [(10_000, "1000", 1.0), (500, "60000", 0.5)],
    ids=["per-message-expiration-lower-than-queue-ttl", "queue-ttl-lower-than-per-message-expiration"],
)
def test_the_lower_of_queue_ttl_and_per_message_expiration_wins(
    queue_ttl_ms: int, expiration: str, lower_s: float
) -> None:
    client = TimedClient()
    client.declare("q", **{"x-message-ttl": queue_ttl_ms})
    client.publish(1, b"m", "q", expiration=expiration)
    client.advance(lower_s)
    assert client.count("q") == 0


def test_per_message_expiration_on_a_plain_queue_expires() -> None:
    client = TimedClient()
    client.declare("q")
    client.publish(1, b"keep", "q")
    client.publish(1, b"go", "q", expiration="100")
    client.advance(0.1)
    assert client.bodies("q") == [b"keep"]


def test_messages_expire_only_at_the_head() -> None:
    client = TimedClient()
    client.declare("q")
    client.publish(1, b"long", "q", expiration="10000")
    client.publish(1, b"short", "q", expiration="1000")
    client.advance(2.0)
    # The short-lived message is behind a live one: still counted until it reaches the head.
    assert client.count("q") == 2
    assert client.bodies("q") == [b"long"]


def test_ttl_zero_delivers_to_a_waiting_consumer() -> None:
    client = TimedClient()
    client.declare("q", **{"x-message-ttl": 0})
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c", no_ack=True))
    client.received()
    client.publish(1, b"now", "q")
    assert [body for _, _, body in client.deliveries()] == [b"now"]


def test_ttl_zero_without_a_consumer_expires_at_once() -> None:
    client = TimedClient()
    client.declare("q")
    client.publish(1, b"now-or-never", "q", expiration="0")
    assert client.get("q") is None


def test_requeued_message_keeps_its_original_expiry() -> None:
    client = TimedClient()
    client.declare("q", **{"x-message-ttl": 1000})
    client.publish(1, b"a", "q")
    client.advance(0.6)
    assert client.get("q", no_ack=False) is not None
    client.send(1, commands.Basic.Reject(delivery_tag=1, requeue=True))
    client.advance(0.4)
    assert client.count("q") == 0


def test_invalid_expiration_closes_the_channel_with_406() -> None:
    client = TimedClient()
    client.declare("q")
    client.publish(1, b"a", "q", expiration="abc")
    assert close_of(client.received()) == (
        1,
        406,
        "PRECONDITION_FAILED - invalid expiration 'abc': no_integer",
    )


def test_negative_message_ttl_argument_is_refused_with_rabbitmq_text() -> None:
    client = TimedClient()
    client.send(1, commands.Queue.Declare(queue="q", arguments={"x-message-ttl": -1}))
    assert close_of(client.received())[1:] == (
        406,
        "PRECONDITION_FAILED - invalid arg 'x-message-ttl' for queue 'q' in vhost '/': {value_negative,-1}",
    )


def test_expired_messages_emit_expired_then_dropped_without_a_dlx() -> None:
    client = TimedClient()
    recorder = Recorder()
    client.broker.events.attach(recorder)
    client.declare("q", **{"x-message-ttl": 10})
    client.publish(1, b"a", "q")
    client.advance(0.01)
    fates = [(event.fate, event.queue, event.detail.get("reason")) for event in recorder.messages]
    assert fates[-2:] == [(Fate.EXPIRED, "q", None), (Fate.DROPPED, "q", "expired")]


# -- x-expires
# -----------------------------------------------------------------------------------------------------


def test_unused_queue_is_deleted_after_x_expires() -> None:
    client = TimedClient()
    client.declare("q", **{"x-expires": 1000})
    client.publish(1, b"a", "q")  # publishing does not count as use
    client.advance(0.999)
    assert "q" in client.broker.vhosts["/"].queues
    client.advance(0.001)
    assert "q" not in client.broker.vhosts["/"].queues


def test_a_consumer_keeps_an_expiring_queue_alive_and_its_leaving_restarts_the_period() -> None:
    client = TimedClient()
    client.declare("q", **{"x-expires": 1000})
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c"))
    client.advance(5.0)
    assert "q" in client.broker.vhosts["/"].queues
    client.send(1, commands.Basic.Cancel(consumer_tag="c"))
    client.advance(0.9)
    assert "q" in client.broker.vhosts["/"].queues
    client.advance(0.1)
    assert "q" not in client.broker.vhosts["/"].queues


def test_basic_get_and_redeclare_restart_the_expiry_period() -> None:
    client = TimedClient()
    client.declare("q", **{"x-expires": 1000})
    client.advance(0.8)
    client.get("q")
    client.advance(0.8)
    assert "q" in client.broker.vhosts["/"].queues
    client.declare("q", **{"x-expires": 1000})
    client.advance(0.8)
    assert "q" in client.broker.vhosts["/"].queues
    client.advance(0.2)
    assert "q" not in client.broker.vhosts["/"].queues
