"""Process-wide runtime settings for `warrenmq serve` (never for an embedded broker, which shares its host's
interpreter)."""

from __future__ import annotations

import gc

# The cyclic collector's defaults (700, 10, 10) run a young collection every 700 container allocations,
# and every message makes several (Message, Envelope, Delivery); the older collections then walk every
# message held in a backlog. Messages are freed by reference counting, so those collections find nothing,
# yet they cost ~20% of publish->consume throughput (amqpperf pubsub 137k -> 169k msg/s, ack50 110k -> 134k
# on the 2-core machine). Collect young objects rarely and freeze what start-up created.
GC_THRESHOLDS = (100_000, 50, 100)


def tune_for_serving() -> None:
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
