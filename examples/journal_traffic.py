"""Traffic for the worked journal example of docs/analytics.md: a direct, a topic and a fanout exchange side
by side.

Publishes at a steady rate for a while, round-robin over
- ``shop.direct`` with routing key ``orders`` (one queue),
- ``shop.topic`` with ``orders.eu.paid`` (bound by ``orders.#`` and ``*.eu.*``: two queues),
- ``shop.fanout`` (three queues),
and now and then an unroutable message (half of them mandatory, so returned). One consumer connection acks
every delivery. Run it against a broker started with ``--journal-dir``; the analytics jobs then compare the
exchanges' time to delivery. Needs pika (``pip install pika``).

    python examples/journal_traffic.py --url amqp://guest:guest@127.0.0.1:5672/ --seconds 20 --rate 2000
"""

from __future__ import annotations

import argparse
import threading
import time

import pika
from pika.adapters.blocking_connection import BlockingChannel

TOPOLOGY = {
    ("shop.direct", "direct"): {"direct.orders": ["orders"]},
    ("shop.topic", "topic"): {"topic.orders": ["orders.#"], "topic.eu": ["*.eu.*"]},
    ("shop.fanout", "fanout"): {"audit.a": [""], "audit.b": [""], "audit.c": [""]},
}
ROUTES = [("shop.direct", "orders"), ("shop.topic", "orders.eu.paid"), ("shop.fanout", "")]
UNROUTABLE_EVERY = 50  # one message in 50 goes nowhere


def declare(channel: BlockingChannel) -> list[str]:
    queues: list[str] = []
    for (exchange, kind), bound in TOPOLOGY.items():
        channel.exchange_declare(exchange, kind)
        for queue, keys in bound.items():
            channel.queue_declare(queue)
            channel.queue_purge(queue)
            for key in keys:
                channel.queue_bind(queue, exchange, key)
            queues.append(queue)
    return queues


def consume(url: str, queues: list[str], stop: threading.Event, counts: dict[str, int]) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=100)

    def on_message(ch: BlockingChannel, method: object, properties: object, body: bytes) -> None:
        counts["acked"] += 1
        ch.basic_ack(method.delivery_tag)  # type: ignore[attr-defined]

    for queue in queues:
        channel.basic_consume(queue, on_message)
    while not stop.is_set():
        connection.process_data_events(time_limit=0.05)
    connection.close()


def publish(url: str, seconds: float, rate: float) -> int:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    sent = 0
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        due = int(elapsed * rate) if rate else sent + 100
        while sent < due:
            if sent % UNROUTABLE_EVERY == UNROUTABLE_EVERY - 1:
                mandatory = sent % (2 * UNROUTABLE_EVERY) == UNROUTABLE_EVERY - 1
                channel.basic_publish("shop.direct", "nowhere", b"lost", mandatory=mandatory)
            else:
                exchange, key = ROUTES[sent % len(ROUTES)]
                channel.basic_publish(exchange, key, b"order %d" % sent)
            sent += 1
        connection.process_data_events(time_limit=0.001)  # returns, heartbeats; also paces the loop
    connection.close()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--rate", type=float, default=2000.0, help="messages per second; 0 = as fast as possible"
    )
    args = parser.parse_args()

    setup = pika.BlockingConnection(pika.URLParameters(args.url))
    queues = declare(setup.channel())
    stop, counts = threading.Event(), {"acked": 0}
    consumer = threading.Thread(target=consume, args=(args.url, queues, stop, counts), daemon=True)
    consumer.start()
    sent = publish(args.url, args.seconds, args.rate)
    deadline = time.monotonic() + 30
    channel = setup.channel()
    while time.monotonic() < deadline:  # until the queues are drained
        if all(channel.queue_declare(queue, passive=True).method.message_count == 0 for queue in queues):
            time.sleep(0.5)  # the last deliveries' acks
            break
        time.sleep(0.1)
    stop.set()
    consumer.join(timeout=10)
    setup.close()
    print(f"published {sent}, acked {counts['acked']}")


if __name__ == "__main__":
    main()
