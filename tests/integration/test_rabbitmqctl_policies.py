"""rabbitmqctl's policy and tracing commands change a running broker as RabbitMQ's do: a policy set from the
CLI caps a queue that already holds messages (max-length drops from the head), clearing it lifts the cap,
and trace_on makes the vhost's publishes appear on amq.rabbitmq.trace. The printed texts are compared
with RabbitMQ's CLI in tests/compat/test_rabbitmqctl_cli.py."""

from __future__ import annotations

from collections.abc import Iterator

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.integration.test_rabbitmqctl import ctl, served

__all__ = ["served"]  # the module fixture: one broker for these tests


@pytest.fixture
def channel(served: tuple[dict[str, str], dict[str, object]]) -> Iterator[BlockingChannel]:
    _, ready = served
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", int(str(ready["amqp_port"]))))
    try:
        yield connection.channel()
    finally:
        connection.close()


def _bodies(channel: BlockingChannel, queue: str) -> list[bytes]:
    bodies: list[bytes] = []
    while True:
        method, _, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return bodies
        bodies.append(body)


def test_a_policy_set_by_the_cli_caps_a_running_queue_and_clearing_it_lifts_the_cap(
    served: tuple[dict[str, str], dict[str, object]], channel: BlockingChannel
) -> None:
    env, _ = served
    channel.queue_declare("capped")
    for n in range(5):
        channel.basic_publish("", "capped", f"m{n}".encode())
    set_result = ctl(
        "set_policy",
        "--apply-to",
        "queues",
        "--priority",
        "1",
        "cap",
        "^capped$",
        '{"max-length":2}',
        env=env,
    )
    assert set_result.returncode == 0, set_result.stderr
    listed = ctl("-q", "list_queues", "name", "policy", "messages", env=env)
    assert "capped\tcap\t2" in listed.stdout.splitlines()
    assert _bodies(channel, "capped") == [b"m3", b"m4"]

    cleared = ctl("clear_policy", "cap", env=env)
    assert cleared.returncode == 0, cleared.stderr
    for n in range(4):
        channel.basic_publish("", "capped", f"n{n}".encode())
    assert channel.queue_declare("capped", passive=True).method.message_count == 4
    assert ctl("-q", "list_policies", env=env).stdout.strip() == ""


def test_an_operator_policy_from_the_cli_caps_a_queue_below_its_own_argument(
    served: tuple[dict[str, str], dict[str, object]], channel: BlockingChannel
) -> None:
    env, _ = served
    channel.queue_declare("bounded", arguments={"x-max-length": 10})
    result = ctl("set_operator_policy", "ceiling", "^bounded$", '{"max-length":3}', env=env)
    assert result.returncode == 0, result.stderr
    for n in range(6):
        channel.basic_publish("", "bounded", f"m{n}".encode())
    try:
        assert channel.queue_declare("bounded", passive=True).method.message_count == 3
    finally:
        ctl("clear_operator_policy", "ceiling", env=env)


def test_trace_on_from_the_cli_copies_publishes_to_the_trace_exchange(
    served: tuple[dict[str, str], dict[str, object]], channel: BlockingChannel
) -> None:
    env, _ = served
    traced = channel.queue_declare("", exclusive=True).method.queue
    channel.queue_bind(traced, "amq.rabbitmq.trace", "publish.#")
    channel.queue_declare("work")
    assert ctl("trace_on", env=env).returncode == 0
    channel.basic_publish("", "work", b"seen")
    assert ctl("trace_off", env=env).returncode == 0
    channel.basic_publish("", "work", b"unseen")
    channel.queue_declare("work", passive=True)  # a round trip: both publishes are routed by now
    assert _bodies(channel, traced) == [b"seen"]
