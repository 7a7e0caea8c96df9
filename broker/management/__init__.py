"""Outer ring: RabbitMQ-compatible management HTTP API and definitions import/export."""
