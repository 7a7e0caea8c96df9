"""`warrenmq bench`: a load generator for any AMQP 0-9-1 broker (WarrenMQ, RabbitMQ), like PerfTest."""
