#!/usr/bin/env python
# Verbatim copy of emit_log.py as listed in rabbitmq/rabbitmq-website tutorials/tutorial-three-python.md (run by tests/tutorials through shim.py).
# ruff: noqa
# mypy: ignore-errors
# fmt: off
import pika
import sys

connection = pika.BlockingConnection(
    pika.ConnectionParameters(host='localhost'))
channel = connection.channel()

channel.exchange_declare(exchange='logs', exchange_type='fanout')

message = ' '.join(sys.argv[1:]) or "info: Hello World!"
channel.basic_publish(exchange='logs', routing_key='', body=message)
print(f" [x] Sent {message}")
connection.close()
