"""The differential scenarios, one module per AMQP class or feature; importing this package registers them all
in ``SCENARIOS``. The shared machinery (``Ctx``, ``outcome``, ``normalise``, ...) is in ``kit``.
"""

from __future__ import annotations

from . import (  # noqa: F401  (each module registers its scenarios)
    basic_ack,
    basic_consume,
    basic_publish,
    confirm_tx,
    connection,
    exchange,
    queue,
    queue_features,
    queue_rules,
    routing,
    streams,
)
from .kit import SCENARIOS, normalise, run_scenario

__all__ = ["SCENARIOS", "normalise", "run_scenario"]
