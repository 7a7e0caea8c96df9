"""`rabbitmq-server`: the rabbitmq image's CMD, here `warrenmq serve` with the same arguments and RabbitMQ's
default file layout (the data directory under /var/lib/rabbitmq/mnesia without RABBITMQ_MNESIA_BASE)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from broker.cli import main as warrenmq

    return warrenmq(["serve", "--rabbitmq-layout", *(sys.argv[1:] if argv is None else argv)])
