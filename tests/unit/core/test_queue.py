"""Queue behaviour: FIFO, round-robin, prefetch, requeue position, auto-delete, exclusive consumers."""

from __future__ import annotations

import pytest

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.queues.queue import Consumer, Queue
from broker.core.queues.queue_admin import add_consumer, basic_get, delete_queue, remove_consumer
from protocol.errors import ChannelError, ReplyCode
from tests.unit.core.fakes import ManualLoop, RecordingChannel


def _message(body: str) -> Message:
    return Message("", "q", b"", body.encode())


def _queue(loop: ManualLoop, **kwargs: object) -> Queue:
    return Queue("q", "/", Dispatcher(loop.call_soon, batch=4), **kwargs)  # type: ignore[arg-type]


def _consumer(queue: Queue, channel: RecordingChannel, tag: str, prefetch: int = 0, **kw: bool) -> Consumer:
    consumer = Consumer(
        tag,
        queue,
        channel,
        no_ack=kw.get("no_ack", False),
        exclusive=kw.get("exclusive", False),
        prefetch_count=prefetch,
    )
    add_consumer(queue, consumer)
    return consumer


def test_messages_are_delivered_round_robin_in_publish_order() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    channel = RecordingChannel()
    _consumer(queue, channel, "a")
    _consumer(queue, channel, "b")
    for i in range(6):
        queue.enqueue(_message(str(i)))
    loop.run()
    assert [(tag, body) for tag, body, _ in channel.delivered] == [
        ("a", "0"),
        ("b", "1"),
        ("a", "2"),
        ("b", "3"),
        ("a", "4"),
        ("b", "5"),
    ]


def test_dispatch_runs_in_bounded_batches_and_reschedules_itself() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    channel = RecordingChannel()
    _consumer(queue, channel, "a", no_ack=True)
    for i in range(10):
        queue.enqueue(_message(str(i)))
    loop.callbacks.pop()()  # one turn: one batch of 4
    assert len(channel.delivered) == 4
    assert loop.callbacks, "the rest must be rescheduled, not delivered in the same turn"
    loop.run()
    assert len(channel.delivered) == 10


def test_prefetch_limits_unacked_deliveries_per_consumer() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    channel = RecordingChannel()
    consumer = _consumer(queue, channel, "a", prefetch=2)
    for i in range(5):
        queue.enqueue(_message(str(i)))
    loop.run()
    assert len(channel.delivered) == 2
    consumer.unacked -= 1
    queue.wake()
    loop.run()
    assert len(channel.delivered) == 3
    assert queue.message_count == 2


def test_requeued_messages_keep_their_original_position_and_are_redelivered() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    for i in range(5):
        queue.enqueue(_message(str(i)))
    first, second = basic_get(queue), basic_get(queue)
    assert first is not None
    assert second is not None
    third = basic_get(queue)
    assert third is not None
    queue.requeue([third, first])
    bodies = [(e.message.body.decode(), e.redelivered) for e in queue.ready]
    assert bodies == [("0", True), ("2", True)]  # requeued copies are envelopes ahead of the fresh ones
    assert [m.body.decode() for m in queue.fresh] == ["3", "4"]
    queue.requeue([second])
    assert [(e.message.body.decode(), e.seq) for e in queue.ready_envelopes()] == [
        ("0", 1),
        ("1", 2),
        ("2", 3),
        ("3", 4),
        ("4", 5),
    ]


def test_requeue_into_the_middle_keeps_order() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    envelopes = []
    for i in range(4):
        queue.enqueue(_message(str(i)))
    while (envelope := basic_get(queue)) is not None:
        envelopes.append(envelope)
    queue.requeue([envelopes[0], envelopes[3]])
    queue.requeue([envelopes[2]])
    assert [e.message.body.decode() for e in queue.ready_envelopes()] == ["0", "2", "3"]


def test_auto_delete_queue_goes_when_its_last_consumer_leaves() -> None:
    loop = ManualLoop()
    unused: list[Queue] = []
    queue = _queue(loop, auto_delete=True, on_unused=unused.append)
    channel = RecordingChannel()
    a = _consumer(queue, channel, "a")
    b = _consumer(queue, channel, "b")
    remove_consumer(queue, a)
    assert unused == []
    remove_consumer(queue, b)
    assert unused == [queue]


def test_exclusive_consumer_refuses_others_with_rabbitmq_text() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    channel = RecordingChannel()
    _consumer(queue, channel, "a", exclusive=True)
    with pytest.raises(ChannelError) as caught:
        _consumer(queue, channel, "b")
    assert caught.value.code is ReplyCode.ACCESS_REFUSED
    assert caught.value.reply_text == "ACCESS_REFUSED - queue 'q' in vhost '/' in exclusive use"


def test_exclusive_consume_on_a_queue_with_consumers_is_refused() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    channel = RecordingChannel()
    _consumer(queue, channel, "a")
    with pytest.raises(ChannelError):
        _consumer(queue, channel, "b", exclusive=True)


def test_delete_cancels_consumers_and_reports_ready_count() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    channel = RecordingChannel(writable=False)
    _consumer(queue, channel, "a")
    queue.enqueue(_message("x"))
    assert delete_queue(queue) == 1
    assert channel.cancelled == ["a"]
    assert queue.deleted


def test_unwritable_channel_gets_nothing_until_woken() -> None:
    loop = ManualLoop()
    queue = _queue(loop)
    channel = RecordingChannel(writable=False)
    _consumer(queue, channel, "a", no_ack=True)
    queue.enqueue(_message("x"))
    loop.run()
    assert channel.delivered == []
    channel.writable = True
    queue.wake()
    loop.run()
    assert len(channel.delivered) == 1
