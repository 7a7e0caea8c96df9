"""Access control on AMQP with pika against an embedded broker: RabbitMQ's exact refusals (the compat suite
diffs every row of the table against RabbitMQ; these run without it), decisions that follow permission
changes on an open channel, and loopback_users for guest."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from broker.session.config import SessionConfig
from broker.testing.embed import BrokerThread


@pytest.fixture
def broker() -> Iterator[BrokerThread]:
    # On every interface, so the loopback test can come in through a non-loopback address.
    with BrokerThread(host="0.0.0.0") as thread:
        yield thread


def _params(
    thread: BrokerThread, user: str, password: str = "pw", host: str = "127.0.0.1", vhost: str = "/"
) -> pika.ConnectionParameters:
    return pika.ConnectionParameters(
        host,
        thread.port,
        vhost,
        pika.PlainCredentials(user, password),
        connection_attempts=1,
        socket_timeout=5,
    )


def _user(thread: BrokerThread, name: str, configure: str, write: str, read: str) -> None:
    def setup() -> None:
        thread.broker.save_user(name, password="pw", tags=())
        thread.broker.access.set_permission(name, "/", configure, write, read)

    thread.call(setup)


def test_refusals_carry_rabbitmqs_codes_and_texts(broker: BrokerThread) -> None:
    _user(broker, "u", "^u-", "^u-", "^u-")
    connection = pika.BlockingConnection(_params(broker, "u"))
    try:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            connection.channel().queue_declare("q")
        assert (refused.value.reply_code, refused.value.reply_text) == (
            403,
            "ACCESS_REFUSED - access to queue 'q' in vhost '/' refused for user 'u'",
        )
        channel = connection.channel()
        channel.confirm_delivery()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            channel.basic_publish("", "u-q", b"m")
        assert refused.value.reply_text == (
            "ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'u'"
        )
        assert connection.channel().queue_declare("u-q").method.queue == "u-q"
    finally:
        connection.close()


def test_topic_permissions_check_routing_keys_on_topic_exchanges(broker: BrokerThread) -> None:
    _user(broker, "t", ".*", ".*", ".*")
    broker.call(broker.broker.access.set_topic_permission, "t", "/", "amq.topic", "^a\\.", "^r\\.")
    connection = pika.BlockingConnection(_params(broker, "t"))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish("amq.topic", "a.x", b"m")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            channel.basic_publish("amq.topic", "b.x", b"m")
        assert refused.value.reply_text == (
            "ACCESS_REFUSED - access to topic 'b.x' in exchange 'amq.topic' in vhost '/' refused for user 't'"
        )
    finally:
        connection.close()


def test_a_permission_change_reaches_an_open_channel(broker: BrokerThread) -> None:
    """The channel's decision cache is dropped when the access model changes (its version moves)."""
    _user(broker, "c", ".*", ".*", ".*")
    connection = pika.BlockingConnection(_params(broker, "c"))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("c-q")
        channel.basic_publish("", "c-q", b"1")
        broker.call(broker.broker.access.set_permission, "c", "/", ".*", "^$", ".*")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            channel.basic_publish("", "c-q", b"2")
        assert refused.value.reply_code == 403
        broker.call(broker.broker.access.set_permission, "c", "/", ".*", ".*", ".*")
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish("", "c-q", b"3")
        assert channel.queue_declare("c-q", passive=True).method.message_count == 2
    finally:
        connection.close()


def test_a_vhost_without_permissions_refuses_connection_open_with_530(broker: BrokerThread) -> None:
    broker.call(broker.broker.save_user, "stranger", "pw", None, ())
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as refused:
        pika.BlockingConnection(_params(broker, "stranger"))
    assert "(530) \"NOT_ALLOWED - access to vhost '/' refused for user 'stranger'\"" in str(refused.value)


def _non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (the test connects to itself through it)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


def test_guest_may_log_in_only_from_loopback(broker: BrokerThread) -> None:
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    pika.BlockingConnection(_params(broker, "guest", "guest")).close()
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as refused:
        pika.BlockingConnection(_params(broker, "guest", "guest", host=address))
    assert "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN" in str(refused.value)
    _user(broker, "remote", ".*", ".*", ".*")
    pika.BlockingConnection(_params(broker, "remote", host=address)).close()


def test_loopback_users_is_configurable() -> None:
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    with BrokerThread(host="0.0.0.0", session=SessionConfig(loopback_users=())) as thread:
        pika.BlockingConnection(_params(thread, "guest", "guest", host=address)).close()
