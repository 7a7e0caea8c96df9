"""Prometheus: the rabbitmq_prometheus metric catalogue, collection and its endpoint; memory breakdown."""
