"""The journal's fast lane writes the same rows as the event-based recorder it replaced (reference.py).

Both are attached to one broker and see the same traffic, which takes every path the journal records: fan-out,
unroutable and returned publishes, consumer and basic.get deliveries with and without acks, multiple acks,
nack and reject with and without requeue, dead-lettering, max-length drops, purge, queue deletion, recover,
channel close and a transaction. Timestamps are compared by their relations, not their values (the two read
the clock at different moments).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pamqp import commands, header

from broker.journal.recorder import JournalRecorder
from broker.journal.schema import COLUMNS, CONSTANT_COLUMNS, DELIVERIES, EVENTS, ROUTE_CAPTURE
from tests.component.features import TimedClient
from tests.unit.journal.reference import ReferenceRecorder
from tests.unit.journal.support import Sink, Ticks, native_lanes


def _traffic(client: TimedClient) -> None:
    send = client.send
    for queue in ("q1", "q2", "q3", "dlq"):
        client.declare(queue)
    client.declare("src", **{"x-dead-letter-exchange": "dlx"})
    client.declare("short", **{"x-max-length": 1})
    send(1, commands.Exchange.Declare(exchange="fx", exchange_type="fanout"))
    send(1, commands.Exchange.Declare(exchange="dlx", exchange_type="fanout"))
    for queue, exchange in (("q1", "fx"), ("q2", "fx"), ("dlq", "dlx")):
        send(1, commands.Queue.Bind(queue=queue, exchange=exchange))
    send(1, commands.Basic.Consume(queue="q1", consumer_tag="c1"))
    client.publish(1, b"one", "", exchange="fx", headers={"n": 1})  # q1 (consumer, tag 1) and q2
    client.publish(1, b"two!", "", exchange="fx")  # tag 2
    send(1, commands.Basic.Ack(delivery_tag=2, multiple=True))
    client.get("q2")  # no-ack get (tag 3)
    client.get("q2", no_ack=False)  # tag 4
    send(1, commands.Basic.Nack(delivery_tag=4, requeue=True))
    client.get("q2", no_ack=False)  # tag 5, redelivered
    send(1, commands.Basic.Reject(delivery_tag=5, requeue=False))  # dropped: q2 has no DLX
    client.publish(1, b"lost", "nowhere")
    send(1, commands.Basic.Publish(exchange="", routing_key="nowhere", mandatory=True))
    send(1, header.ContentHeader(0, 0, commands.Basic.Properties()))
    client.publish(1, b"dead", "src")
    client.get("src", no_ack=False)  # tag 6
    send(1, commands.Basic.Reject(delivery_tag=6, requeue=False))  # dead-lettered to dlq
    client.publish(1, b"a", "short")
    client.publish(1, b"b", "short")  # drops "a" (maxlen)
    client.publish(1, b"p1", "q2")
    client.publish(1, b"p2", "q2")
    send(1, commands.Queue.Purge(queue="q2"))
    client.publish(1, b"d1", "q2")
    send(1, commands.Queue.Delete(queue="q2"))
    client.publish(1, b"r1", "q3")
    client.get("q3", no_ack=False)  # tag 7
    send(1, commands.Basic.Recover(requeue=True))
    client.open_channel(2)
    send(2, commands.Basic.Consume(queue="q3", consumer_tag="c2"))  # r1 again, unacked
    send(2, commands.Channel.Close(reply_code=200, reply_text="", class_id=0, method_id=0))
    client.open_channel(3)
    send(3, commands.Tx.Select())
    client.publish(3, b"t1", "q3")  # routed at commit
    send(3, commands.Basic.Get(queue="q3"))  # r1 (tag 1 on channel 3)
    send(3, commands.Basic.Ack(delivery_tag=1))  # settled at commit
    send(3, commands.Tx.Commit())
    client.get("q3", no_ack=True, channel=3)  # t1


def _run(
    mode: str, capture_routing: bool, draws: list[float] | None, native: bool = False
) -> tuple[Sink, ReferenceRecorder]:
    client = TimedClient()
    bus = client.broker.events
    ticks = Ticks()

    def rng() -> Iterator[float]:
        return iter(draws) if draws is not None else iter(())

    new_draws, old_draws = rng(), rng()
    sample = 0.5 if draws is not None else 1.0
    sink = Sink()
    journal = JournalRecorder(
        sink, ticks, mode=mode, sample=sample, capture_routing=capture_routing,
        rng=lambda: next(new_draws), ids=bus.ids, native=native,
    )  # fmt: skip
    reference = ReferenceRecorder(
        ticks, mode=mode, sample=sample, capture_routing=capture_routing, rng=lambda: next(old_draws)
    )
    journal.attach(bus)
    bus.attach(reference)
    _traffic(client)
    journal.flush()
    return sink, reference


def _timeless(table: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    ts = [i for i, (_, kind) in enumerate(COLUMNS[table][CONSTANT_COLUMNS:]) if kind == "ts"]
    return [
        tuple("<ts>" if i in ts and value is not None else value for i, value in enumerate(row))
        for row in rows
    ]


@native_lanes
@pytest.mark.parametrize("mode", ["compact", "full"])
@pytest.mark.parametrize("capture_routing", [False, True])
def test_fast_lane_rows_equal_the_event_recorder_rows(mode: str, capture_routing: bool, native: bool) -> None:
    sink, reference = _run(mode, capture_routing, draws=None, native=native)
    for table in (EVENTS, DELIVERIES, ROUTE_CAPTURE):
        assert _timeless(table, sink.tuples(table)) == _timeless(table, reference.rows[table]), table
    written = sink.tuples(DELIVERIES if mode == "compact" else EVENTS)
    assert len([row for row in written if row[3] is not None]) >= (14 if mode == "compact" else 40)
    assert bool(sink.tuples(ROUTE_CAPTURE)) == capture_routing


@native_lanes
@pytest.mark.parametrize("mode", ["compact", "full"])
def test_sampled_rows_equal_the_event_recorder_rows(mode: str, native: bool) -> None:
    draws = [0.9, 0.1] * 20  # every other publish sampled
    sink, reference = _run(mode, False, draws, native)
    table = DELIVERIES if mode == "compact" else EVENTS
    assert _timeless(table, sink.tuples(table)) == _timeless(table, reference.rows[table])
    sampled = {row[3] for row in sink.tuples(table) if row[3] is not None}
    assert 0 < len(sampled) < 14


@native_lanes
def test_compact_rows_carry_ordered_publish_deliver_and_settle_times(native: bool) -> None:
    sink, _ = _run("compact", False, draws=None, native=native)
    rows = sink.rows[DELIVERIES]
    delivered = [row for row in rows if row["deliver_ts"] is not None]
    assert delivered
    for row in delivered:
        assert row["publish_ts"] < row["deliver_ts"] <= row["ts"]
    by_message: dict[int, set[int]] = {}
    for row in rows:
        by_message.setdefault(row["msg_seq"], set()).add(row["publish_ts"])
    assert all(len(times) == 1 for times in by_message.values())
