"""The journal recorder on a live session: which rows each mode writes, sampling, routing capture, state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pamqp import commands

from broker.core.model.typed_json import decode_table
from broker.journal.recorder import JournalRecorder
from broker.journal.schema import DELIVERIES, EVENTS, ROUTE_CAPTURE
from tests.component.harness import Client
from tests.unit.journal.support import Sink, Ticks


def setup(**options: Any) -> tuple[Client, JournalRecorder, Sink]:
    client = Client()
    sink = Sink()
    recorder = JournalRecorder(sink, Ticks(), ids=client.broker.events.ids, **options)
    recorder.attach(client.broker.events)
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    return client, recorder, sink


def test_compact_mode_writes_one_row_per_delivery_with_publish_deliver_and_settle_times() -> None:
    client, recorder, sink = setup()
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c"))
    client.publish(1, b"hello", "q")
    client.send(1, commands.Basic.Ack(delivery_tag=1))
    recorder.flush()
    [row] = sink.rows[DELIVERIES]
    assert (row["outcome"], row["exchange"], row["routing_key"], row["queue"]) == ("ack", "", "q", "q")
    assert (row["fanout"], row["body_size"], row["redelivered"]) == (1, 5, False)
    assert row["publish_ts"] < row["deliver_ts"] < row["ts"]
    assert recorder.inflight == {}


def test_compact_mode_nack_requeue_then_ack_gives_two_attempts_and_the_second_is_redelivered() -> None:
    client, recorder, sink = setup()
    client.publish(1, b"x", "q")
    client.send(1, commands.Basic.Get(queue="q"))
    client.send(1, commands.Basic.Nack(delivery_tag=1, requeue=True))
    client.send(1, commands.Basic.Get(queue="q"))
    client.send(1, commands.Basic.Ack(delivery_tag=2))
    recorder.flush()
    rows = sink.rows[DELIVERIES]
    assert [(r["outcome"], r["reason"], r["redelivered"]) for r in rows] == [
        ("nack", "requeue", False),
        ("ack", None, True),
    ]
    assert rows[0]["msg_seq"] == rows[1]["msg_seq"]


def test_compact_mode_records_unroutable_and_returned_publishes() -> None:
    client, recorder, sink = setup()
    client.publish(1, b"x", "nowhere")
    client.send(1, commands.Basic.Publish(exchange="", routing_key="nowhere", mandatory=True))
    from pamqp import header

    client.send(1, header.ContentHeader(0, 0, commands.Basic.Properties()))
    recorder.flush()
    assert [(r["outcome"], r["fanout"], r["queue"]) for r in sink.rows[DELIVERIES]] == [
        ("unroutable", 0, None),
        ("returned", 0, None),
    ]


def test_full_mode_writes_every_event_with_the_publish_time_carried() -> None:
    client, recorder, sink = setup(mode="full")
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c"))
    client.publish(1, b"x", "q")
    client.send(1, commands.Basic.Reject(delivery_tag=1, requeue=False))
    recorder.flush()
    events = [r for r in sink.rows[EVENTS] if r["msg_seq"] is not None]
    assert [(e["event"], e["queue"]) for e in events] == [
        ("publish", None),
        ("route", None),
        ("deliver", "q"),
        ("nack", "q"),
        ("drop", "q"),
    ]
    publish_ts = events[0]["ts"]
    assert {e["publish_ts"] for e in events} == {publish_ts}
    assert events[1]["fanout"] == 1
    assert events[2]["delivery_tag"] == 1
    assert events[4]["reason"] == "rejected"
    assert events[0]["connection"] == "127.0.0.1:50000"
    assert events[0]["channel"] == 1
    topology = [r["event"] for r in sink.rows[EVENTS] if r["msg_seq"] is None]
    assert topology == ["queue_declared", "consumer_added"]


def test_sampling_keeps_all_or_none_of_a_messages_rows() -> None:
    draws = iter([0.9, 0.1, 0.9, 0.1])  # sample 0.5: the 2nd and 4th messages are kept
    client, recorder, sink = setup(mode="full", sample=0.5, rng=lambda: next(draws))
    for body in (b"1", b"22", b"333", b"4444"):
        client.publish(1, body, "q")
    for _tag in range(1, 5):
        client.send(1, commands.Basic.Get(queue="q", no_ack=True))
    recorder.flush()
    rows = [r for r in sink.rows[EVENTS] if r["msg_seq"] is not None]
    assert {r["body_size"] for r in rows} == {2, 4}
    assert sorted(r["event"] for r in rows if r["body_size"] == 2) == ["ack", "deliver", "publish", "route"]


def test_routing_capture_keeps_typed_headers_and_the_queues_reached() -> None:
    client, recorder, sink = setup(capture_routing=True)
    client.send(1, commands.Exchange.Declare(exchange="h", exchange_type="headers"))
    client.send(1, commands.Queue.Bind(queue="q", exchange="h", arguments={"x-match": "all", "n": 5}))
    client.publish(1, b"x", "", exchange="h", headers={"n": 5, "s": "5"})
    recorder.flush()
    [capture] = sink.rows[ROUTE_CAPTURE]
    assert (capture["exchange"], capture["queues"]) == ("h", ["q"])
    assert decode_table(capture["headers_json"]) == {"n": 5, "s": "5"}
    assert type(decode_table(capture["headers_json"])["n"]) is int  # type: ignore[index]


def test_batches_go_to_the_sink_when_full_without_waiting_for_flush() -> None:
    client, _recorder, sink = setup(batch_rows=2)
    for _ in range(3):
        client.publish(1, b"x", "nowhere")
    assert len(sink.rows[DELIVERIES]) == 2


def test_on_a_loop_publishes_share_one_clock_reading_per_iteration() -> None:
    pending: list[Callable[[], None]] = []
    client, recorder, sink = setup(call_soon=pending.append)
    client.publish(1, b"a", "nowhere")
    client.publish(1, b"b", "nowhere")  # same loop iteration: same reading
    assert len(pending) == 1
    for callback in pending:  # the next iteration starts
        callback()
    client.publish(1, b"c", "nowhere")
    recorder.flush()
    times = [row["ts"] for row in sink.rows[DELIVERIES]]
    assert times[0] == times[1] < times[2]


def test_deliveries_dispatched_before_the_reading_is_forgotten_are_still_later_than_their_publish() -> None:
    # The dispatcher's callback is queued while routing, before the journal's: on a FIFO loop it runs first,
    # in the next iteration, while the publish's reading is still kept.
    client = Client()
    sink = Sink()
    recorder = JournalRecorder(sink, Ticks(), ids=client.broker.events.ids, call_soon=client.loop.call_soon)
    recorder.attach(client.broker.events)
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="q"))
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c"))
    client.publish(1, b"x", "q")
    client.send(1, commands.Basic.Ack(delivery_tag=1))
    recorder.flush()
    [row] = sink.rows[DELIVERIES]
    assert row["publish_ts"] < row["deliver_ts"] < row["ts"]
