"""The oracle node's start-up survives a port taken between picking it and the node binding it."""

from __future__ import annotations

import socket
from pathlib import Path

import pika
import pytest

from .rabbitmq_node import RabbitMQNode, rabbitmq_available


@pytest.mark.skipif(not rabbitmq_available(), reason="rabbitmq-server is not installed")
def test_a_taken_amqp_port_makes_the_node_start_again_on_a_new_one(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))  # bound, not listening: the node cannot bind it, clients are refused
        port = taken.getsockname()[1]
        node = RabbitMQNode(tmp_path, port=port)
        try:
            node.start()
            assert node.port != port
            pika.BlockingConnection(pika.URLParameters(node.url)).close()
        finally:
            node.stop()
