"""AMQP 1.0 connections on the AMQP port, beside the 0-9-1 session on the same core (RabbitMQ 4's
rabbit_amqp_reader, rabbit_amqp_session and its message conversions, mc_amqp and mc_amqpl)."""
