#!/usr/bin/env python
# Verbatim copy of emit_log_direct.py as listed in rabbitmq/rabbitmq-website tutorials/tutorial-four-python.md (run by tests/tutorials through shim.py).
# ruff: noqa
# mypy: ignore-errors
# fmt: off
import pika
import sys

connection = pika.BlockingConnection(
    pika.ConnectionParameters(host='localhost'))
channel = connection.channel()

channel.exchange_declare(exchange='direct_logs', exchange_type='direct')

severity = sys.argv[1] if len(sys.argv) > 1 else 'info'
message = ' '.join(sys.argv[2:]) or 'Hello World!'
channel.basic_publish(
    exchange='direct_logs', routing_key=severity, body=message)
print(f" [x] Sent {severity}:{message}")
connection.close()
