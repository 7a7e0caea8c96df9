#!/usr/bin/env python
# Verbatim copy of rabbitmq/rabbitmq-tutorials python/send.py (run by tests/tutorials through shim.py).
# ruff: noqa
# mypy: ignore-errors
# fmt: off
import pika

connection = pika.BlockingConnection(
    pika.ConnectionParameters(host="localhost"),
)
channel = connection.channel()

channel.queue_declare(queue="hello", durable=True, arguments={"x-queue-type": "quorum"})

channel.basic_publish(exchange="", routing_key="hello", body="Hello World!")
print(" [x] Sent 'Hello World!'")

connection.close()
