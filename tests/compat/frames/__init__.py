"""The frame-exact differential harness: every frame RabbitMQ and WarrenMQ send, recorded by a proxy, decoded
field by field and compared (docs/architecture.md, "tests/compat/frames")."""
