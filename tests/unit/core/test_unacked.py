"""UnackedTracker: delivery-tag bookkeeping with RabbitMQ's collect_acks rules."""

from __future__ import annotations

import pytest

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.unacked import Delivery, UnackedTracker
from protocol.errors import ChannelError, ReplyCode
from tests.unit.core.fakes import ManualLoop


def _tracker(count: int) -> tuple[UnackedTracker, Queue]:
    queue = Queue("q", "/", Dispatcher(ManualLoop().call_soon))
    tracker = UnackedTracker()
    for i in range(count):
        tag = tracker.allocate_tag()
        tracker.track(Delivery(tag, queue, Envelope(i, Message("", "q", b"", b"")), None))
    return tracker, queue


def test_single_ack_removes_only_that_tag() -> None:
    tracker, queue = _tracker(3)
    settled = tracker.settle(2, multiple=False)
    assert [d.delivery_tag for d in settled] == [2]
    assert len(tracker) == 2
    assert queue.unacked == 2


def test_multiple_ack_removes_every_tag_up_to_and_including() -> None:
    tracker, _ = _tracker(5)
    tracker.settle(2, multiple=False)
    settled = tracker.settle(4, multiple=True)
    assert [d.delivery_tag for d in settled] == [1, 3, 4]
    assert len(tracker) == 1


def test_multiple_with_tag_zero_means_everything() -> None:
    tracker, queue = _tracker(4)
    assert len(tracker.settle(0, multiple=True)) == 4
    assert queue.unacked == 0


@pytest.mark.parametrize(("tag", "multiple"), [(9, False), (9, True), (0, False)])
def test_unknown_tag_is_a_406_with_rabbitmq_text(tag: int, multiple: bool) -> None:
    tracker, _ = _tracker(3)
    with pytest.raises(ChannelError) as caught:
        tracker.settle(tag, multiple)
    assert caught.value.code is ReplyCode.PRECONDITION_FAILED
    assert caught.value.reply_text == f"PRECONDITION_FAILED - unknown delivery tag {tag}"


def test_double_ack_is_an_unknown_tag() -> None:
    tracker, _ = _tracker(1)
    tracker.settle(1, False)
    with pytest.raises(ChannelError):
        tracker.settle(1, False)


def test_restore_keeps_tag_order_for_later_multiple_acks() -> None:
    tracker, _ = _tracker(4)
    settled = tracker.settle(1, False) + tracker.settle(3, False)
    tracker.restore(settled)
    assert [d.delivery_tag for d in tracker.settle(3, True)] == [1, 2, 3]
