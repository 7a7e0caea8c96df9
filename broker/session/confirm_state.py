"""A channel's publisher-confirm state, as a compiled base class of the channel session
(broker.session.channel_session.ChannelSession): broker.session.confirms moves it.

Why a class of its own: `confirms.published` runs for every publish on a confirming channel. Compiled code
reads a compiled class's attributes directly, where through the ``ChannelPort`` protocol each read or write
was a generic attribute lookup: with 1,000 persistent confirms in flight those lookups were a tenth of the
loop thread's time (``perf record``). The session modules still depend on ``ChannelPort``; `confirms` views
the channel as this class for its own fields.
"""

from __future__ import annotations

from collections import deque


class PublisherConfirms:
    def __init__(self) -> None:
        self.confirm = False  # confirm.select
        self.publish_seq = 0  # the last publish's seq
        self.confirmed_seq = 0  # every publish up to it is settled on the wire
        # What stops confirms from being one ack up to publish_seq: publishes above confirmed_seq already
        # settled one by one, publishes to nack at the next flush, publishes waiting for a store commit in
        # publish order as runs of one batch [first seq, last seq, batch id, nack], the last publish a flush
        # sorted.
        self.confirms_settled: set[int] = set()
        self.confirms_rejected: list[int] = []
        self.commit_waits: deque[list[int]] = deque()
        self.confirms_scanned = 0
