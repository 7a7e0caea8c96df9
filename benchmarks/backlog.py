"""What a queue backlog costs the broker per published message: bytes held, objects the cyclic collector
tracks, and the time a full collection takes over the backlog.

Publishes ``--messages`` messages (16-byte body, shared header) into ``--queues`` plain queues with no
consumer, as a fanout exchange leaves them when the publisher outruns the consumers, and measures with
tracemalloc and the collector's own object list (deterministic: no timing but the last column). Every message
shares one body and one header object here, so the bytes are the broker's own objects per message held:

    PYTHONPATH=/tmp/base-tree python benchmarks/backlog.py --queues 1 10
    PYTHONPATH=. python benchmarks/backlog.py --queues 1 10
    PYTHONPATH=. python benchmarks/backlog.py --wire      # the same messages published over a session

``--wire`` feeds the publishes through a `ConnectionSession` as a client writes them (200 per read) into one
queue, so the message, body and header objects are what the frame path makes of them: all a backlog holds.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.queues.queue import Queue

HEADER = bytes(12)  # a content header without properties: class, weight, body size, flags
BODY = b"x" * 16


def measure(queues: int, messages: int) -> tuple[float, float, float]:
    """(bytes per message, GC-tracked objects per message, full collection ms) for one backlog."""
    dispatcher = Dispatcher(lambda callback: None)
    held = [Queue(f"q{index}", "/", dispatcher) for index in range(queues)]
    gc.collect()
    tracked_before = len(gc.get_objects())
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(messages):
        message = Message("fan", "", HEADER, BODY)
        for queue in held:
            queue.enqueue(message)
    allocated = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    tracked = len(gc.get_objects()) - tracked_before
    start = time.perf_counter()
    gc.collect()
    full_ms = (time.perf_counter() - start) * 1e3
    assert sum(queue.message_count for queue in held) == queues * messages
    return allocated / messages, tracked / messages, full_ms


def measure_wire(messages: int) -> tuple[float, float]:
    """(bytes, GC-tracked objects) per message held, published through a session into one queue."""
    from pamqp import commands

    from benchmarks.hotpath import BATCH, _publishes
    from tests.component.harness import Client

    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q0"))
    client.received()
    chunk = _publishes(1, "", "q0", BATCH)
    gc.collect()
    tracked_before = len(gc.get_objects())
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(messages // BATCH):
        client.session.data_received(chunk)
    client.loop.run()
    gc.collect()
    allocated = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    tracked = len(gc.get_objects()) - tracked_before
    assert client.broker.vhosts["/"].queues["q0"].message_count == messages // BATCH * BATCH
    return allocated / messages, tracked / messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--queues", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--wire", action="store_true", help="publish over a session into one queue")
    args = parser.parse_args()
    if args.wire:
        per_message, tracked = measure_wire(args.messages)
        print(
            f"over the wire, 1 queue: {per_message:6.0f} B and {tracked:4.1f} GC-tracked objects per message"
        )
        return
    for queues in args.queues:
        per_message, tracked, full_ms = measure(queues, args.messages)
        print(
            f"{queues:3} queue(s): {per_message:6.0f} B and {tracked:4.1f} GC-tracked objects per message "
            f"held, full collection over {args.messages:,} messages {full_ms:5.0f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
