"""An AMQP 1.0 publish settled accepted survives a crash: the outcome of a persistent message routed to a
durable queue waits for its store batch, as a 0-9-1 publisher confirm does (RabbitMQ 4 settles a transfer
once the queues confirmed it)."""

from __future__ import annotations

from proton import Delivery, Message
from proton.utils import BlockingConnection

from tests.durability.conftest import DurableBroker


def test_accepted_amqp10_publishes_survive_sigkill(durable: DurableBroker) -> None:
    durable.stop()  # the fixture's broker is on the default profile, which does not speak AMQP 1.0
    broker = durable.start("--profile", "rabbitmq-4.0")
    channel = durable.connect().channel()
    channel.queue_declare("amqp10-durable", durable=True)
    channel.connection.close()
    connection = BlockingConnection(f"amqp://guest:guest@127.0.0.1:{broker.port}", timeout=10)
    sender = connection.create_sender("/queues/amqp10-durable")
    states = [sender.send(Message(body=f"m{i}".encode(), durable=True)).remote_state for i in range(20)]
    connection.close()
    assert states == [Delivery.ACCEPTED] * 20
    durable.kill()
    durable.start("--profile", "rabbitmq-4.0")
    channel = durable.connect().channel()
    assert channel.queue_declare("amqp10-durable", passive=True).method.message_count == 20
    channel.connection.close()
