"""A message's place in one queue, and the order of envelopes in a queue's ready list."""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable

from broker.core.model.compile_hints import mypyc_attr
from broker.core.model.message import Message


@mypyc_attr(allow_interpreted_subclasses=True)
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


def put_back(ready: deque[Envelope], envelopes: Iterable[Envelope]) -> list[Envelope]:
    """Requeue: each envelope back at its publish position in ``ready``, marked redelivered (RabbitMQ since
    2.7.0); returns them."""
    put = sorted(envelopes, key=seq_of, reverse=True)
    for envelope in put:
        envelope.redelivered = True
        if not ready or envelope.seq < ready[0].seq:
            ready.appendleft(envelope)
        else:
            ready.insert(bisect_left(ready, envelope.seq, key=seq_of), envelope)
    return put


def wrap_fresh(ready: deque[Envelope], fresh: deque[Message], last_seq: int) -> None:
    """Append the fresh copies (bare messages whose seqs end at ``last_seq``) to ``ready`` as envelopes."""
    seq = last_seq - len(fresh)
    for message in fresh:
        seq += 1
        ready.append(Envelope(seq, message))
    fresh.clear()
