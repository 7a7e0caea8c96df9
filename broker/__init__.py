"""WarrenMQ: an AMQP 0-9-1 broker that behaves like RabbitMQ."""

# protocol's __init__ chooses between the mypyc-compiled modules and their pure sources
# (protocol/compiled.py); it must run before any compiled broker.core module is imported, and this runs first.
import protocol as _protocol  # noqa: F401

__version__ = "0.1.0"
