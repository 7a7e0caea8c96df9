"""Broker-side CPU time per message, in process and without sockets: 16-byte publishes routed to one queue and
delivered to a no-ack consumer, fed as raw frames (batches of 100) to one ConnectionSession; best of 7 runs of
100,000 messages, in ns/message of ``time.process_time``.

Less disturbed by a loaded machine than wall-clock throughput (one process, no client competing for the
cores), so it suits comparing two source trees for a small hot-path difference. Usage, alternating trees:

    for r in 1 2 3 4 5; do for t in /tmp/old-tree .; do python perf/session_cpu.py $t; done; done

Each tree needs its own tests/component/harness.py (the scripted client of the component tests).
"""

from __future__ import annotations

import sys
import time

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else ".")

from pamqp import body, commands, frame, header

from tests.component.harness import Client

BATCH = 100


def main() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c", no_ack=True))
    one = (
        frame.marshal(commands.Basic.Publish(exchange="", routing_key="q"), 1)
        + frame.marshal(header.ContentHeader(0, 16, commands.Basic.Properties()), 1)
        + frame.marshal(body.ContentBody(b"x" * 16), 1)
    )
    batch = one * BATCH
    client.feed(batch)
    assert len(client.transport.buffer) > BATCH * 40, "no deliveries written"

    def run(batches: int) -> float:
        start = time.process_time()
        for _ in range(batches):
            client.feed(batch)
            client.transport.buffer.clear()
        return time.process_time() - start

    run(200)
    best = min(run(1000) for _ in range(7))
    assert not client.transport.closed
    print(f"{sys.argv[1] if len(sys.argv) > 1 else '.'} {best / (1000 * BATCH) * 1e9:.0f} ns/message")


if __name__ == "__main__":
    main()
