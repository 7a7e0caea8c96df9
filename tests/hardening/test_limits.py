"""Node and channel limits set in rabbitmq.conf, with RabbitMQ's config names, reply codes and texts (3.13's
rabbit_reader / rabbit_channel): connection_max, consumer_max_per_channel, max_message_size, channel_max,
frame_max."""

from __future__ import annotations

from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from tests.hardening.served import Served, serve

CONF = """connection_max = 2
consumer_max_per_channel = 2
max_message_size = 1024
channel_max = 4
frame_max = 8192
"""


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = serve(tmp_path_factory.mktemp("limits"), CONF)
    yield served
    served.stop()


def _params(broker: Served, **overrides: object) -> pika.ConnectionParameters:
    return pika.ConnectionParameters("127.0.0.1", broker.port, socket_timeout=5, **overrides)


def test_connection_max_refuses_the_connection_over_the_limit_at_open(limited: Served) -> None:
    first = pika.BlockingConnection(_params(limited))
    second = pika.BlockingConnection(_params(limited))
    # pika reports a close during connection.open as a probable access denial, quoting the broker's close.
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as refused:
        pika.BlockingConnection(_params(limited))
    assert str(refused.value.args[0]) == (
        "ConnectionClosedByBroker: (530) "
        "'NOT_ALLOWED - connection refused: node connection limit (2) is reached'"
    )
    second.close()
    third = pika.BlockingConnection(_params(limited))  # a freed slot is usable again
    assert third.is_open
    third.close()
    first.close()


def test_consumer_max_per_channel_closes_the_connection_with_530(limited: Served) -> None:
    connection = pika.BlockingConnection(_params(limited))
    channel = connection.channel()
    queue = channel.queue_declare("", exclusive=True).method.queue
    channel.basic_consume(queue, lambda *_: None, consumer_tag="one")
    channel.basic_consume(queue, lambda *_: None, consumer_tag="two")
    other = connection.channel()  # the limit is per channel
    other.basic_consume(queue, lambda *_: None)
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        channel.basic_consume(queue, lambda *_: None, consumer_tag="three")
    assert (closed.value.reply_code, closed.value.reply_text) == (
        530,
        "NOT_ALLOWED - reached maximum (2) of consumers per channel",
    )


def test_max_message_size_closes_the_channel_with_406(limited: Served) -> None:
    connection = pika.BlockingConnection(_params(limited))
    channel = connection.channel()
    channel.confirm_delivery()
    queue = channel.queue_declare("", exclusive=True).method.queue
    channel.basic_publish("", queue, b"x" * 1024)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
        channel.basic_publish("", queue, b"x" * 1025)
    assert (closed.value.reply_code, closed.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - message size 1025 is larger than configured max size 1024",
    )
    connection.close()


def test_channel_max_and_frame_max_are_what_tune_offers(limited: Served) -> None:
    # The client asks for more than the broker offers and gets the broker's limits (negotiation picks the
    # lower non-zero value).
    connection = pika.BlockingConnection(_params(limited, channel_max=100, frame_max=131072))
    params = connection._impl.params
    assert (params.channel_max, params.frame_max) == (4, 8192)
    # A body larger than frame_max travels in several body frames and arrives whole.
    channel = connection.channel()
    queue = channel.queue_declare("", exclusive=True).method.queue
    channel.basic_publish("", queue, b"y" * 1000)
    _method, _props, body = channel.basic_get(queue, auto_ack=True)
    assert body == b"y" * 1000
    connection.close()
