"""Publisher confirms for one channel, sent when and as RabbitMQ 3.10's rabbit_channel sends them.

rabbit_channel confirms a publish that reached no queue while it handles that basic.publish: its own
basic.ack, ``multiple=false``, right after the basic.return of a mandatory one. A routed publish is confirmed
by its queues later (a classic queue confirms a transient message as soon as it has it, a persistent one on a
durable queue after the store's fsync), and those confirms are coalesced: the channel collects the confirmed
seqs and sends them with ``coalesce_and_send`` (one ``multiple=true`` ack up to the smallest publish still
unconfirmed or nacked, a single ack each above it; a lone confirm is always ``multiple=false``), then the
nacks the same way. Here the queues' confirms arrive once the frames of one read are handled (`flush`, which
the connection calls then), and a stored publish's once its store batch has committed. The oracle does
exactly that, every time, e.g. for transient T, unroutable mandatory U and persistent-to-durable P publishes
in one TCP segment: TTU -> return, ack 3, ack 2 multiple; PUT -> return, ack 2, ack 3, (commit) ack 1
(tests/compat/test_frame_order.py).

State on the channel: ``confirmed_seq``, every publish up to it is settled on the wire; ``confirms_settled``,
publishes above it already acked or nacked one by one; ``confirms_rejected``, publishes to nack at the next
flush; ``commit_waits``, stored publishes waiting for their batch, in publish order, as runs of consecutive
publishes of one batch: [first seq, last seq, batch id, nack]; ``confirms_scanned``, the last publish an
earlier flush sorted. In the common case (every publish routed, nothing stored or rejected) only
``confirmed_seq`` moves, and one flush sends one basic.ack.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, cast

from protocol.fastpath import encode_basic_ack, encode_basic_nack

if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable, Iterable, Sequence

    from broker.core.topology.vhost import VirtualHost
    from broker.session.confirm_state import PublisherConfirms
    from broker.session.ports import ChannelPort

    _Encoder = Callable[[int, int, bool], bytes]  # encode_basic_ack / encode_basic_nack


def published(
    channel: ChannelPort, vhost: VirtualHost, queues: Sequence[object], rejected: bool, stored: bool
) -> None:
    """A publish in confirm mode was handled; ``queues``: those it reached (none: unroutable), ``rejected``: a
    queue refused it (x-overflow reject-publish), ``stored``: it was written to the store."""
    # Every ChannelPort is a ChannelSession, so PublisherConfirms: its fields read directly (compiled), not
    # looked up through the protocol, for every publish.
    state = cast("PublisherConfirms", channel)
    seq = state.publish_seq + 1
    state.publish_seq = seq
    conn = channel.conn
    faults = conn.faults
    if faults is not None and faults.take_nack(vhost.name):
        rejected = True
    if stored:
        persistence = vhost.persistence
        assert persistence is not None
        batch_id = persistence.batch_id
        waits = state.commit_waits
        nack = 1 if rejected else 0
        last = waits[-1] if waits else None
        if last is None or last[2] != batch_id:
            # Once per batch, not per publish: a channel whose last wait is in this batch is already one of
            # its waiters (a batch calls each waiter once, when it commits, whatever it holds of the
            # channel's).
            persistence.on_commit(batch_id, channel)
            waits.append([seq, seq, batch_id, nack])
        elif last[1] == seq - 1 and last[3] == nack:
            last[1] = seq  # the run grows: no object per stored publish
        else:
            waits.append([seq, seq, batch_id, nack])
    elif not queues:
        _confirm_unroutable(channel, rejected)
    elif rejected:
        state.confirms_rejected.append(seq)
        conn.want_confirm_flush(channel)
    else:
        conn.want_confirm_flush(channel)


def _publisher_nack(channel: int, seq: int, multiple: bool) -> bytes:
    """rabbit_channel's send_nacks builds #'basic.nack'{delivery_tag, multiple}, leaving requeue at the
    record's default, true (observed on RabbitMQ 3.10: every publisher nack carries requeue=1)."""
    return encode_basic_nack(channel, seq, multiple, requeue=True)


def _confirm_unroutable(channel: ChannelPort, nack: bool) -> None:
    """rabbit_channel process_routing_confirm(true, [], ...): no queue will confirm it, so the channel does,
    once the publish is handled; alone, as the queues' confirms of earlier publishes are still to come. (A
    nack here is a test's injected one: it takes the ack's place.)"""
    seq = channel.publish_seq
    conn = channel.conn
    faults = conn.faults
    if faults is not None and conn.vhost is not None and faults.holds(channel, conn.vhost.name):
        if nack:
            channel.confirms_rejected.append(seq)
        conn.want_confirm_flush(channel)  # withheld: the flush after the release sends it
        return
    if nack:
        conn.write(_publisher_nack(channel.channel_id, seq, False))
    else:
        channel.stats.confirm += 1
        conn.write(encode_basic_ack(channel.channel_id, seq, False))
    if seq - 1 == channel.confirmed_seq:
        channel.confirmed_seq = seq
        channel.confirms_scanned = max(channel.confirms_scanned, seq)
    else:
        channel.confirms_settled.add(seq)


def flush(channel: ChannelPort) -> None:
    """Send what the queues and the store have confirmed since the last flush, as rabbit_channel's
    send_confirms_and_nacks: the acks, then the nacks."""
    upto = channel.publish_seq
    if upto == channel.confirmed_seq or channel.closing:
        return
    conn = channel.conn
    faults = conn.faults
    if faults is not None and conn.vhost is not None and faults.holds(channel, conn.vhost.name):
        return
    if channel.commit_waits or channel.confirms_settled or channel.confirms_rejected:
        _flush_sorted(channel)
        return
    # Every publish since the last flush was routed and nothing waits: one ack (coalesce_and_send).
    multiple = upto - channel.confirmed_seq > 1
    channel.stats.confirm += upto - channel.confirmed_seq
    channel.confirmed_seq = channel.confirms_scanned = upto
    conn.write(encode_basic_ack(channel.channel_id, upto, multiple))


def _flush_sorted(channel: ChannelPort) -> None:
    """Sort the unsettled publishes into confirmed, rejected and still waiting, and send as RabbitMQ does."""
    vhost = channel.conn.vhost
    committed = vhost.persistence.committed_id if vhost is not None and vhost.persistence else 0
    waits = channel.commit_waits
    upto = channel.publish_seq
    start = max(channel.confirms_scanned, channel.confirmed_seq) + 1  # the first publish not sorted yet
    channel.confirms_scanned = upto
    acks: list[int] = []
    stored_nacks: list[int] = []
    while waits and waits[0][2] <= committed:
        first, last, _, nack = waits.popleft()
        (stored_nacks if nack else acks).extend(range(first, last + 1))
    # Both in publish order: how many of them the earlier flushes have not sorted yet.
    stored_unsorted = len(acks) - bisect_left(acks, start)
    stored_unsorted += len(stored_nacks) - bisect_left(stored_nacks, start)
    nacks = channel.confirms_rejected + stored_nacks
    channel.confirms_rejected = []
    # The unsorted publishes that are neither stored nor settled are routed ones the queues confirm now. When
    # stored publishes (committed just now, or still waiting: the tail of waits) are all of them, as with
    # persistent publishes to a durable queue, there is nothing to look for: a flush costs what it pops and
    # what was published since the last one, never what is in flight.
    unstored = upto - start + 1 - stored_unsorted
    if unstored > 0 and _waiting_from(waits, start) < unstored:
        known = set(channel.confirms_settled)
        known.update(acks, nacks)
        for first, last, _, _ in reversed(waits):
            if last < start:
                break
            known.update(range(max(first, start), last + 1))
        acks.extend(seq for seq in range(start, upto + 1) if seq not in known)
        acks.sort()
    if not acks and not nacks:
        return
    nacks.sort()
    waiting = waits[0][0] if waits else None
    if acks:
        channel.stats.confirm += len(acks)
        if len(acks) == 1:  # send_confirms([MsgSeqNo]): a lone ack is never multiple
            _settle(channel, [], acks, encode_basic_ack)
        else:
            _coalesce(channel, acks, nacks, waiting, encode_basic_ack)
    if nacks:
        _coalesce(channel, nacks, acks, waiting, _publisher_nack)
    _normalise(channel)


def _waiting_from(waits: deque[list[int]], start: int) -> int:
    """How many of the publishes still waiting for their commit are ``start`` or later (the runs at the tail
    of ``waits``)."""
    count = 0
    for first, last, _, _ in reversed(waits):
        if last < start:
            break
        count += last - max(first, start) + 1
    return count


def _coalesce(
    channel: ChannelPort, seqs: list[int], others: list[int], waiting: int | None, encode: _Encoder
) -> None:
    """rabbit_channel coalesce_and_send: ``multiple=true`` up to the last seq below the cutoff (the smallest
    publish still waiting, else past the last seq; lower if one of ``others`` is lower), one by one above."""
    cutoff = waiting if waiting is not None else seqs[-1] + 1
    if others:
        cutoff = min(cutoff, others[0])
    below = bisect_left(seqs, cutoff)
    _settle(channel, seqs[:below], seqs[below:], encode)


def _settle(channel: ChannelPort, multiple: list[int], singles: list[int], encode: _Encoder) -> None:
    conn, channel_id = channel.conn, channel.channel_id
    if multiple:
        conn.write(encode(channel_id, multiple[-1], True))
        channel.confirmed_seq = max(channel.confirmed_seq, multiple[-1])
    for seq in singles:
        conn.write(encode(channel_id, seq, False))
        channel.confirms_settled.add(seq)


def _normalise(channel: ChannelPort) -> None:
    """Move ``confirmed_seq`` up over the publishes settled one by one."""
    settled = channel.confirms_settled
    floor = channel.confirmed_seq
    if settled:
        settled.difference_update([seq for seq in settled if seq <= floor])
        while floor + 1 in settled:
            floor += 1
            settled.discard(floor)
        channel.confirmed_seq = floor
    channel.confirms_scanned = max(channel.confirms_scanned, floor)


def flush_channels(channels: Iterable[ChannelPort]) -> None:
    """Send the confirms each channel collected during one read (the connection calls this once the read's
    frames are handled)."""
    for channel in channels:
        if channel.consumers:
            # rabbit_channel sends the confirms it collected once its mailbox is empty, so what the confirmed
            # publishes made deliverable to the channel's own consumers goes out first (a publish confirmed
            # and delivered on one channel: basic.deliver, then basic.ack).
            for consumer in list(channel.consumers.values()):
                consumer.queue.dispatcher.catch_up(consumer.queue)
        channel.flush_confirms()
