"""Process-wide runtime settings for `warrenmq serve` (never for an embedded broker, which shares its host's
interpreter)."""

from __future__ import annotations

import contextlib
import gc
import os
import resource
from collections.abc import Iterator
from pathlib import Path

# The cyclic collector's defaults (700, 10, 10) run a young collection every 700 container allocations,
# and every message makes several (Message, Envelope, Delivery); the older collections then walk every
# message held in a backlog. Messages are freed by reference counting, so those collections find nothing,
# yet they cost ~20% of publish->consume throughput (amqpperf pubsub 137k -> 169k msg/s, ack50 110k -> 134k
# on the 2-core machine). Collect young objects rarely and freeze what start-up created.
GC_THRESHOLDS = (100_000, 50, 100)
# With these thresholds a full collection comes every ~500M allocations, and only a full one frees a closed
# connection: its protocol, session, channels and consumers point at each other. Measured with `serve`: RSS
# grew 5.8 KB per connection opened and closed (25 B with the default thresholds), and a soak churning a
# connection a second grew ~0.8 MB a minute. A full collection every CLOSES_PER_COLLECTION closed
# connections bounds that garbage (~1 MB) at a cost paid per connection, never per message.
CLOSES_PER_COLLECTION = 200
# A full collection walks every live object, so its cost grows with the connections still open: at one per
# 200 closes, 20,000 clients leaving at once cost 100 collections of the whole heap (~50 s of CPU, during
# which the listener could not keep up). As CPython's own full collections wait for long-lived objects to
# grow by a quarter, the next one waits for a quarter of the open connections to close: the cost per close
# stays flat, and the garbage stays under a quarter of what the open connections hold.
OPEN_FRACTION_PER_COLLECTION = 4
_closes_left = [0]  # 0: not serving (an embedded broker leaves its host's collector alone)


def tune_for_serving() -> None:
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    _closes_left[0] = CLOSES_PER_COLLECTION
    raise_fd_limit()


def connection_closed(open_connections: int) -> None:
    """A client connection is gone: every CLOSES_PER_COLLECTION of them (or a quarter of the
    ``open_connections`` left, when more), collect what they left in cycles."""
    left = _closes_left[0]
    if left:
        if left == 1:
            gc.collect()
            left = max(CLOSES_PER_COLLECTION, open_connections // OPEN_FRACTION_PER_COLLECTION) + 1
        _closes_left[0] = left - 1


def raise_fd_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit, as RabbitMQ's runtime does at start: every client
    socket is a descriptor, and a soft limit of 1024 (a common default) would cap the node at ~1,000
    connections. The hard limit needs privileges to raise and stays as the system set it. Returns the
    limits now in force."""
    # structlog (and the asyncio it imports) only here: `warrenmq serve` imports this module for GC_THRESHOLDS
    # and sets them before the rest loads (broker.cli); the collector ran 31 times (~5 ms) during these two.
    import structlog

    log = structlog.get_logger("warrenmq.server")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        # An unlimited hard limit still caps descriptors at fs.nr_open; ask for a large finite number then.
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1_048_576)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as error:
            log.warning("fd_limit_not_raised", soft=soft, hard=hard, error=str(error))
    log.info("fd_limit", soft=soft, hard=hard)
    return soft, hard


@contextlib.contextmanager
def pid_file(path: str | None) -> Iterator[None]:
    """RABBITMQ_PID_FILE for the life of the process: written at start (its directory created, as
    RabbitMQ's prelaunch does), removed on a clean stop."""
    if path is None:
        yield
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{os.getpid()}\n")
    try:
        yield
    finally:
        target.unlink(missing_ok=True)
