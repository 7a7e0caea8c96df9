"""The consume path in one process, no sockets: CPU µs per message through session, core and codecs.

Clients of `tests.component.harness` feed pre-encoded frames into `ConnectionSession.data_received`, 200
messages per read as amqpperf writes them; the consumer's output is counted and dropped. What this leaves
out (the event loop, socket reads and writes) is the same for every build, so it tells two builds apart
with a precision rates on a shared machine do not have (process CPU time, best of ``--repeat``):

    PYTHONPATH=/tmp/base-tree python benchmarks/hotpath.py
    PYTHONPATH=. python benchmarks/hotpath.py --repeat 7
    PYTHONPATH=. python benchmarks/hotpath.py --burst 100 fanout ack1   # backlogs of 20,000 messages

``--burst N`` feeds N reads of publishes before the consumers run, so each queue holds a backlog of up to
N x 200 messages, as when a publisher outruns its consumers; the cyclic collector's young collections then
walk what the backlog holds, and the time they take is reported beside the CPU per message.
"""

from __future__ import annotations

import argparse
import gc
import struct
import time
from collections.abc import Callable

from pamqp import commands, frame, header
from pamqp.body import ContentBody

from broker.server.runtime import tune_for_serving
from tests.component.harness import Client

BATCH = 200
BODY = b"x" * 16


def _publishes(channel: int, exchange: str, routing_key: str, count: int) -> bytes:
    one = b"".join(
        (
            frame.marshal(commands.Basic.Publish(exchange=exchange, routing_key=routing_key), channel),
            frame.marshal(header.ContentHeader(0, len(BODY), commands.Basic.Properties()), channel),
            frame.marshal(ContentBody(BODY), channel),
        )
    )
    return one * count


_ACK = struct.Struct("!BHIHHQBB")  # frame header, basic.ack (60, 80), delivery-tag, multiple, frame-end


def _ack(channel: int, tag: int, multiple: bool) -> bytes:
    return _ACK.pack(1, channel, 13, 60, 80, tag, multiple, 0xCE)


class Sink:
    """The consumer's transport: counts bytes, keeps nothing."""

    def __init__(self) -> None:
        self.bytes = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        self.bytes += len(data)

    def close(self, after_s: float | None = None) -> None:
        self.closed = True


def scenario(kind: str, messages: int, burst: int = 1) -> Callable[[], None]:
    """Set up a broker, a publisher and consumers; return the timed part."""
    publisher = Client()
    publisher.handshake()
    publisher.open_channel(1)
    broker, loop = publisher.broker, publisher.loop
    queues = 10 if kind == "fanout" else 1
    exchange, key = ("fan", "") if kind == "fanout" else ("", "q0")
    if kind == "fanout":
        publisher.send(1, commands.Exchange.Declare(exchange="fan", exchange_type="fanout"))
    consumers = []
    for index in range(queues):
        publisher.send(1, commands.Queue.Declare(queue=f"q{index}"))
        if kind == "fanout":
            publisher.send(1, commands.Queue.Bind(queue=f"q{index}", exchange="fan"))
        consumer = Client(broker=broker, loop=loop)
        consumer.handshake()
        consumer.open_channel(1)
        no_ack = kind in ("pubsub", "fanout")
        if not no_ack:
            consumer.send(1, commands.Basic.Qos(prefetch_count=100))
        consumer.send(1, commands.Basic.Consume(queue=f"q{index}", no_ack=no_ack))
        consumer.received()
        sink = Sink()
        consumer.session.transport = sink
        consumers.append(consumer)
    publisher.received()
    publisher.session.transport = Sink()
    chunk = _publishes(1, exchange, key, BATCH)
    feed = publisher.session.data_received

    acks = [_ack(1, tag, kind == "ack50") for tag in range(messages + 1)]  # encoded before the clock starts
    every = 1 if kind == "ack1" else 50

    def run() -> None:
        acked = 0
        for _ in range(messages // (BATCH * burst)):
            for _ in range(burst):
                feed(chunk)
            loop.run()
            if kind not in ("ack1", "ack50"):
                continue
            session = consumers[0].session
            unacked = session.channels[1].unacked
            while (delivered := unacked.next_tag - 1) > acked:
                if every == 1:
                    data = b"".join(acks[acked + 1 : delivered + 1])
                    acked = delivered
                else:
                    # multiple=true every 50 tags, and whatever is left once the queue is empty
                    last = delivered - delivered % every
                    if last <= acked:
                        last = delivered
                    data = b"".join(acks[tag] for tag in range(acked + every, last + 1, every))
                    if last % every:
                        data += acks[last]
                    acked = last
                session.data_received(data)
                loop.run()
        for consumer in consumers:  # every message went out (and, with acks, came back)
            channel = consumer.session.channels[1]
            assert not channel.closing
            assert not len(channel.unacked)
        assert not any(queue.message_count for queue in broker.vhosts["/"].queues.values())

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("kinds", nargs="*", default=["pubsub", "ack1", "ack50", "fanout"])
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--burst", type=int, default=1, help="reads of 200 publishes fed per loop turn")
    args = parser.parse_args()
    tune_for_serving()
    collections = GcTimer()
    gc.callbacks.append(collections)
    for kind in args.kinds:
        samples = []
        for _ in range(args.repeat):
            run = scenario(kind, args.messages, args.burst)
            gc.collect()
            collections.reset()
            start = time.process_time()
            run()
            took = time.process_time() - start
            samples.append((took / args.messages * 1e6, collections.count, collections.seconds / took))
        samples.sort()
        best, median = samples[0], samples[len(samples) // 2]
        print(
            f"{kind:8} best {best[0]:6.2f} µs/msg  median {median[0]:6.2f}  "
            f"(median run: {median[1]} collections, {median[2]:.1%} of its CPU in them)",
            flush=True,
        )


class GcTimer:
    """A gc.callbacks hook: how many collections ran and their wall time (the process is single-threaded and
    the collector does not sleep, so wall time is its CPU time)."""

    def __init__(self) -> None:
        self.count, self.seconds, self._start = 0, 0.0, 0.0

    def reset(self) -> None:
        self.count, self.seconds = 0, 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._start


if __name__ == "__main__":
    main()
