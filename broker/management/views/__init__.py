"""Serialisation of objects and their statistics into the API's JSON, in RabbitMQ's keys."""
