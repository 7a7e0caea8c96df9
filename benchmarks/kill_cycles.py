"""SIGKILL cycles under a mixed confirmed load: nothing confirmed is lost, and every redelivery is marked.

Each cycle runs the load for a random 0.5-2 s, kills the broker with SIGKILL, and starts it again on the same
data directory. The load (aio_pika, loopback only): persistent messages with publisher confirms into a durable
classic queue, a quorum queue, a stream, and through a durable ``x-delayed-message`` exchange (held 0.2-3 s,
so some come due while the broker is down); consumers on the classic, quorum and delayed queues ack most
deliveries and nack-with-requeue one in eight.

Checked, over all cycles:
- lost: a confirmed message that was never acked and is not in its queue (or stream) at the end;
- unmarked redeliveries: a message received again (after a requeue, or after a kill whether or not it was
  acked, as an ack not yet committed may come back) with redelivered=false. RabbitMQ's promise is
  at-least-once: duplicates are allowed, a redelivery without the flag is not.

    .venv/bin/python benchmarks/kill_cycles.py --cycles 100 --out /tmp/kill_cycles.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika

TARGETS = ("classic", "quorum", "stream", "delayed")
CONSUMED = {"classic": "kc.classic", "quorum": "kc.quorum", "delayed": "kc.delayed.q"}
MAX_DELAY_MS = 3_000


@dataclass
class Ledger:
    """What the clients saw, over every cycle."""

    confirmed: dict[str, set[str]] = field(default_factory=lambda: {t: set() for t in TARGETS})
    acked: set[str] = field(default_factory=set)
    received: dict[str, int] = field(default_factory=dict)  # message id -> receptions
    unmarked: list[tuple[int, str]] = field(default_factory=list)  # (cycle, message id)
    redeliveries: int = 0
    nacked: int = 0
    sent: int = 0


class Broker:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self.ready: dict[str, Any] = {}

    def start(self) -> float:
        started = time.monotonic()
        cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0"]
        cmd += ["--management-port", "-1", "--prometheus-port", "-1", "--data-dir", self.data_dir]
        with open(f"{self.data_dir}.log", "a") as log:
            self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            log_tail = Path(f"{self.data_dir}.log").read_text()[-3000:]
            raise RuntimeError(f"the broker did not start ({self.process.returncode}): {log_tail}")
        self.ready = json.loads(line)
        self.url = f"amqp://guest:guest@127.0.0.1:{self.ready['amqp_port']}/%2F"
        return time.monotonic() - started

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(timeout=60)


async def topology(url: str) -> None:
    connection = await aio_pika.connect(url)
    channel = await connection.channel()
    await channel.declare_queue("kc.classic", durable=True)
    await channel.declare_queue("kc.quorum", durable=True, arguments={"x-queue-type": "quorum"})
    await channel.declare_queue("kc.stream", durable=True, arguments={"x-queue-type": "stream"})
    exchange = await channel.declare_exchange(
        "kc.delayed", "x-delayed-message", durable=True, arguments={"x-delayed-type": "direct"}
    )
    queue = await channel.declare_queue("kc.delayed.q", durable=True)
    await queue.bind(exchange, "k")
    await connection.close()


async def publish(url: str, ledger: Ledger, cycle: int, rng: random.Random, rate: int) -> None:
    connection = await aio_pika.connect(url)
    channel = await connection.channel(publisher_confirms=True)
    delayed = await channel.get_exchange("kc.delayed")
    window = asyncio.Semaphore(64)
    tasks: set[asyncio.Task[None]] = set()

    async def one(target: str, message_id: str) -> None:
        try:
            body = message_id.encode()
            if target == "delayed":
                headers: dict[str, Any] = {"x-delay": rng.randrange(200, MAX_DELAY_MS)}
                message = aio_pika.Message(body, delivery_mode=2, headers=headers)
                # mandatory=False: a held message is routed nowhere at publish, so a mandatory one gets a
                # basic.return at once (as with the plugin), which aio_pika takes for the confirm.
                await delayed.publish(message, "k", mandatory=False)
            else:
                message = aio_pika.Message(body, delivery_mode=2)
                await channel.default_exchange.publish(message, f"kc.{target}")
            ledger.confirmed[target].add(message_id)
        except Exception:  # the broker was killed: unconfirmed, may or may not survive
            return
        finally:
            window.release()

    number = 0
    while not connection.is_closed:
        await window.acquire()
        target = TARGETS[number % len(TARGETS)]
        task = asyncio.ensure_future(one(target, f"{target}-{cycle}-{number}"))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        ledger.sent += 1
        number += 1
        await asyncio.sleep(1 / rate)


async def consume(url: str, queue_name: str, ledger: Ledger, cycle: int) -> None:
    connection = await aio_pika.connect(url)
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=50)
    queue = await channel.get_queue(queue_name)
    async with queue.iterator() as messages:
        async for message in messages:
            note_reception(ledger, cycle, message.body.decode(), bool(message.redelivered))
            if message.delivery_tag is not None and message.delivery_tag % 8 == 0:
                ledger.nacked += 1
                await message.nack(requeue=True)
            else:
                await message.ack()
                ledger.acked.add(message.body.decode())


def note_reception(ledger: Ledger, cycle: int, message_id: str, redelivered: bool) -> None:
    seen = ledger.received.get(message_id, 0)
    ledger.received[message_id] = seen + 1
    if seen:
        ledger.redeliveries += 1
        if not redelivered:
            ledger.unmarked.append((cycle, message_id))


async def run_cycle(broker: Broker, ledger: Ledger, cycle: int, rng: random.Random, rate: int) -> float:
    tasks = [asyncio.ensure_future(publish(broker.url, ledger, cycle, rng, rate))]
    tasks += [asyncio.ensure_future(consume(broker.url, name, ledger, cycle)) for name in CONSUMED.values()]
    load_s = rng.uniform(0.5, 2.0)
    await asyncio.sleep(load_s)
    broker.kill()  # nothing of the broker runs after this
    await asyncio.sleep(0.2)  # the clients see the dead sockets
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=10)
    return load_s


async def drain(broker: Broker, ledger: Ledger, cycle: int) -> dict[str, set[str]]:
    """What each queue holds at the end (basic.get, no_ack), and the stream's ids from its first offset."""
    connection = await aio_pika.connect(broker.url)
    channel = await connection.channel()
    left: dict[str, set[str]] = {}
    for target, name in CONSUMED.items():
        queue = await channel.get_queue(name)
        left[target] = set()
        while (message := await queue.get(no_ack=True, fail=False)) is not None:
            message_id = message.body.decode()
            note_reception(ledger, cycle, message_id, bool(message.redelivered))
            left[target].add(message_id)
    await channel.set_qos(prefetch_count=1000)
    stream = await channel.get_queue("kc.stream")
    left["stream"] = set()
    wanted = len(ledger.confirmed["stream"])
    with contextlib.suppress(asyncio.TimeoutError):
        async with stream.iterator(arguments={"x-stream-offset": "first"}) as messages:
            async with asyncio.timeout(60):
                async for message in messages:
                    left["stream"].add(message.body.decode())
                    await message.ack()
                    if len(left["stream"] & ledger.confirmed["stream"]) >= wanted:
                        break
    await connection.close()
    return left


async def main_async(cycles: int, seed: int, rate: int, out_path: Path) -> int:
    rng = random.Random(seed)
    ledger = Ledger()
    with tempfile.TemporaryDirectory(prefix="warrenmq-kill-") as tmp, out_path.open("w") as out:
        broker = Broker(f"{tmp}/data")
        broker.start()
        await topology(broker.url)
        for cycle in range(cycles):
            confirmed_before = sum(map(len, ledger.confirmed.values()))
            load_s = await run_cycle(broker, ledger, cycle, rng, rate)
            restart_s = broker.start()
            line = {
                "cycle": cycle,
                "load_s": round(load_s, 2),
                "confirmed": sum(map(len, ledger.confirmed.values())) - confirmed_before,
                "restart_s": round(restart_s, 3),
                "recovered": broker.ready.get("recovered", {}),
                "redeliveries": ledger.redeliveries,
                "unmarked": len(ledger.unmarked),
            }
            out.write(json.dumps(line) + "\n")
            out.flush()
            print(json.dumps(line), flush=True)
        await asyncio.sleep(MAX_DELAY_MS / 1000 + 1)  # every held message is due
        left = await drain(broker, ledger, cycles)
        broker.stop()
        lost = {
            target: sorted(ledger.confirmed[target] - ledger.acked - left[target])
            if target != "stream"
            else sorted(ledger.confirmed[target] - left[target])
            for target in TARGETS
        }
        summary = {
            "summary": True,
            "seed": seed,
            "cycles": cycles,
            "sent": ledger.sent,
            "confirmed": {target: len(ids) for target, ids in ledger.confirmed.items()},
            "acked": len(ledger.acked),
            "nacked": ledger.nacked,
            "redeliveries": ledger.redeliveries,
            "unmarked_redeliveries": len(ledger.unmarked),
            "unmarked_examples": ledger.unmarked[:10],
            "lost": {target: len(ids) for target, ids in lost.items()},
            "lost_examples": {target: ids[:10] for target, ids in lost.items() if ids},
        }
        out.write(json.dumps(summary) + "\n")
        print(json.dumps(summary), flush=True)
        return 1 if any(lost.values()) or ledger.unmarked else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rate", type=int, default=400, help="publishes per second (all targets)")
    parser.add_argument("--out", type=Path, default=Path("kill_cycles.jsonl"))
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    sys.exit(asyncio.run(main_async(args.cycles, seed, args.rate, args.out)))


if __name__ == "__main__":
    main()
