#!/usr/bin/env python
# Verbatim copy of rabbitmq/rabbitmq-tutorials python/emit_log_topic.py (run by tests/tutorials through shim.py).
# ruff: noqa
# mypy: ignore-errors
# fmt: off
import sys

import pika

connection = pika.BlockingConnection(
    pika.ConnectionParameters(host="localhost"),
)
channel = connection.channel()

channel.exchange_declare(exchange="topic_logs", exchange_type="topic")

routing_key = sys.argv[1] if len(sys.argv) > 2 else "anonymous.info"
message = " ".join(sys.argv[2:]) or "Hello World!"
channel.basic_publish(
    exchange="topic_logs",
    routing_key=routing_key,
    body=message,
)
print(f" [x] Sent {routing_key}:{message}")

connection.close()
