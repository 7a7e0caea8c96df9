"""A message's place in one queue."""

from __future__ import annotations

from broker.core.message import Message


class Envelope:
    """A message's place in one queue: ``seq`` is its publish position, kept when it is requeued."""

    __slots__ = ("message", "redelivered", "seq")

    def __init__(self, seq: int, message: Message, redelivered: bool = False) -> None:
        self.seq = seq
        self.message = message
        self.redelivered = redelivered


def seq_of(envelope: Envelope) -> int:
    """The sort key that puts requeued envelopes back at their publish positions."""
    return envelope.seq
