"""The durability promises of docs/architecture.md: kill -9 a broker while confirmed persistent publishing and
unacked deliveries are in flight, restart it, and check RabbitMQ's promise: every confirmed message is there
(at least once; duplicates allowed), and every message a consumer received before the kill and did not ack
comes back with redelivered=true, in every cycle.

A delivery leaves the broker in the loop turn that marks it, before the batch holding the mark commits, so
the mark of a delivery made just before the kill may be missing. After a crash recovery therefore marks every
recovered message redelivered, as RabbitMQ's queue index does at a dirty recovery (2 of 2,773 such
deliveries came back redelivered=false when recovery trusted the marks).

WARRENMQ_KILL_CYCLES (default 4) sets the number of kill/restart cycles; e.g. 50 for a long run.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
from dataclasses import dataclass, field

import aio_pika
import pytest

from tests.durability.conftest import DurableBroker

CYCLES = int(os.environ.get("WARRENMQ_KILL_CYCLES", "4"))
IN_FLIGHT = 64
QUEUE = "kill-target"

pytestmark = pytest.mark.slow


@dataclass
class Cycle:
    """What one cycle's clients saw before the kill. Stamps come from one counter (see the module doc)."""

    confirmed: dict[str, int] = field(default_factory=dict)  # message id -> stamp when it was sent
    unacked: dict[str, int] = field(default_factory=dict)  # message id -> stamp when it was received
    acked: set[str] = field(default_factory=set)
    sent: int = 0
    broken: bool = False  # a publish failed: the broker is gone, stop publishing
    settled: int = 0  # publishes that ended, confirmed or failed


async def _publish(url: str, cycle: Cycle, prefix: str, stamps: itertools.count[int]) -> None:
    connection = await aio_pika.connect(url)
    channel = await connection.channel(publisher_confirms=True)
    window = asyncio.Semaphore(IN_FLIGHT)

    async def one(message_id: str) -> None:
        try:
            stamp = next(stamps)
            await channel.default_exchange.publish(
                aio_pika.Message(message_id.encode(), delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
                routing_key=QUEUE,
            )
            cycle.confirmed[message_id] = stamp
        except Exception:  # the broker was killed: unconfirmed, may or may not survive
            cycle.broken = True
        finally:
            cycle.settled += 1
            window.release()

    tasks = set()
    for number in itertools.count():
        await window.acquire()
        if connection.is_closed or cycle.broken:
            break
        cycle.sent += 1
        task = asyncio.ensure_future(one(f"{prefix}-{number}"))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def _consume(url: str, cycle: Cycle, stamps: itertools.count[int]) -> None:
    """Takes deliveries, acks every third one, leaves the rest unacked (prefetch bounds them)."""
    connection = await aio_pika.connect(url)
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=200)
    queue = await channel.get_queue(QUEUE)
    async with queue.iterator() as messages:
        async for message in messages:
            message_id = message.body.decode()
            if int(message_id.rsplit("-", 1)[1]) % 3 == 0:
                await message.ack()
                cycle.acked.add(message_id)
            else:
                cycle.unacked[message_id] = next(stamps)


async def _run_until_killed(durable: DurableBroker, prefix: str, kill_after_s: float) -> Cycle:
    assert durable.process is not None
    url = durable.process.url
    cycle = Cycle()
    stamps = itertools.count()
    tasks = [
        asyncio.ensure_future(_publish(url, cycle, prefix, stamps)),
        asyncio.ensure_future(_consume(url, cycle, stamps)),
    ]
    await asyncio.sleep(kill_after_s)  # traffic for a random time: each cycle's kill lands elsewhere in it
    durable.process.process.send_signal(signal.SIGKILL)  # nothing of the broker runs after this
    durable.process.process.wait()
    # Until the clients have noticed the dead sockets and record nothing more: every publish confirmed or
    # failed and the publisher stopped; the consumer took what it had read and its iterator ended.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not (all(task.done() for task in tasks) and cycle.settled == cycle.sent):
        assert loop.time() < deadline, (
            f"the clients did not notice the killed broker: {cycle.sent=} {cycle.settled=}"
        )
        await asyncio.sleep(0.01)
    # Snapshot what the clients knew at the kill, before their teardown can race anything.
    snapshot = Cycle(dict(cycle.confirmed), dict(cycle.unacked), set(cycle.acked), cycle.sent, True)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return snapshot


async def _drain(url: str) -> list[tuple[str, bool]]:
    connection = await aio_pika.connect(url)
    try:
        channel = await connection.channel()
        queue = await channel.get_queue(QUEUE)
        got: list[tuple[str, bool]] = []
        while (message := await queue.get(no_ack=True, fail=False)) is not None:
            got.append((message.body.decode(), bool(message.redelivered)))
        return got
    finally:
        await connection.close()


async def test_confirmed_messages_survive_sigkill_and_unacked_ones_come_back_redelivered(
    durable: DurableBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = int(os.environ.get("WARRENMQ_KILL_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    assert durable.process is not None
    connection = await aio_pika.connect(durable.process.url)
    channel = await connection.channel()
    await channel.declare_queue(QUEUE, durable=True)
    await connection.close()
    totals = {"sent": 0, "confirmed": 0, "unacked": 0, "recovered": 0, "duplicates": 0}
    for number in range(CYCLES):
        cycle = await _run_until_killed(durable, f"c{number}", rng.uniform(0.4, 1.5))
        durable.process = None
        durable.start()
        assert durable.process is not None
        got = await _drain(durable.process.url)
        bodies = [message_id for message_id, _ in got]
        redelivered = {message_id for message_id, flag in got if flag}

        lost = sorted(set(cycle.confirmed) - set(bodies) - cycle.acked)  # an acked message may go
        assert not lost, f"seed {seed} cycle {number}: confirmed messages lost: {lost[:10]} ({len(lost)})"
        delivered_before_kill = set(cycle.unacked) & set(bodies)
        missing_flag = sorted(delivered_before_kill - redelivered)
        assert not missing_flag, f"seed {seed} cycle {number}: not redelivered: {missing_flag[:10]}"
        # Earlier cycles were drained; a confirm in this cycle proves those removals were committed.
        foreign = [message_id for message_id in bodies if not message_id.startswith(f"c{number}-")]
        assert not (foreign and cycle.confirmed), (
            f"seed {seed} cycle {number}: messages of earlier cycles came back: {foreign[:10]}"
        )

        totals["sent"] += cycle.sent
        totals["confirmed"] += len(cycle.confirmed)
        totals["unacked"] += len(delivered_before_kill)
        totals["recovered"] += len(bodies)
        totals["duplicates"] += len(bodies) - len(set(bodies))
    assert totals["confirmed"] > 0, "no publish was confirmed in any cycle: the test proved nothing"
    with capsys.disabled():
        print(f"\nsigkill: seed={seed} cycles={CYCLES} " + " ".join(f"{k}={v}" for k, v in totals.items()))
