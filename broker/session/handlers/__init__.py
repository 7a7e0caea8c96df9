"""One handler module per AMQP class."""
