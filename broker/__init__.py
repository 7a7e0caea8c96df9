"""WarrenMQ: an AMQP 0-9-1 broker that behaves like RabbitMQ."""

__version__ = "0.1.0"
