#!/usr/bin/env python
# Verbatim copy of rabbitmq/rabbitmq-tutorials python/new_task.py (run by tests/tutorials through shim.py).
# ruff: noqa
# mypy: ignore-errors
# fmt: off
import sys

import pika

connection = pika.BlockingConnection(
    pika.ConnectionParameters(host="localhost"),
)
channel = connection.channel()

channel.queue_declare(queue="task_queue", durable=True, arguments={"x-queue-type": "quorum"})

message = " ".join(sys.argv[1:]) or "Hello World!"
channel.basic_publish(
    exchange="",
    routing_key="task_queue",
    body=message,
    properties=pika.BasicProperties(
        delivery_mode=pika.DeliveryMode.Persistent,
    ),
)
print(f" [x] Sent {message}")

connection.close()
