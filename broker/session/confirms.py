"""Publisher confirms for one channel: acks (``multiple`` where one covers several publishes), nacks, and the
wait for the store's commit before a stored publish is confirmed (confirms.md: for persistent messages routed
to durable queues, the confirm "means persisting to disk").

``channel.commit_waits`` holds, in publish order, the publishes whose confirm waits for a store batch and the
nacks queued behind them: (publish seq, batch id (0: nothing to wait for), nack). No ack goes past the first
publish whose batch has not committed.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from protocol.fastpath import encode_basic_ack, encode_basic_nack

if TYPE_CHECKING:
    from broker.core.vhost import VirtualHost
    from broker.session.ports import ChannelPort


def published(channel: ChannelPort, vhost: VirtualHost, rejected: bool, stored: bool) -> None:
    """A publish in confirm mode was routed; ``rejected``: a queue refused it (x-overflow reject-publish),
    ``stored``: it was written to the store."""
    channel.publish_seq += 1
    faults = channel.conn.faults
    if faults is not None and faults.take_nack(vhost.name):
        rejected = True
    if stored:
        persistence = vhost.persistence
        assert persistence is not None
        channel.commit_waits.append((channel.publish_seq, persistence.batch_id, rejected))
        persistence.on_commit(persistence.batch_id, channel)
    elif channel.commit_waits:
        if rejected:
            channel.commit_waits.append((channel.publish_seq, 0, True))
        channel.conn.want_confirm_flush(channel)
    elif rejected:
        _nack(channel, channel.publish_seq)
    else:
        channel.conn.want_confirm_flush(channel)


def _nack(channel: ChannelPort, seq: int) -> None:
    """Nack publish ``seq`` (confirms.md "basic.nack … when the queue … rejected it", or a test's injected
    nack); the publishes before it are acked first."""
    if seq - 1 > channel.confirmed_seq:
        multiple = seq - 1 - channel.confirmed_seq > 1
        channel.stats.confirm += seq - 1 - channel.confirmed_seq
        channel.conn.write(encode_basic_ack(channel.channel_id, seq - 1, multiple))
    channel.confirmed_seq = seq
    channel.conn.write(encode_basic_nack(channel.channel_id, seq, False))


def flush(channel: ChannelPort) -> None:
    """One basic.ack per flush, ``multiple`` when it covers more than one publish; none past a publish whose
    store batch has not committed yet."""
    upto = channel.publish_seq
    if upto == channel.confirmed_seq or channel.closing:
        return
    conn = channel.conn
    faults = conn.faults
    if faults is not None and conn.vhost is not None and faults.holds(channel, conn.vhost.name):
        return
    waits = channel.commit_waits
    if waits:
        upto = _release_committed(channel, waits)
        if upto <= channel.confirmed_seq:
            return
    multiple = upto - channel.confirmed_seq > 1
    channel.stats.confirm += upto - channel.confirmed_seq
    channel.confirmed_seq = upto
    conn.write(encode_basic_ack(channel.channel_id, upto, multiple))


def _release_committed(channel: ChannelPort, waits: deque[tuple[int, int, bool]]) -> int:
    """Send the nacks whose turn has come; the highest publish seq that may be acked now."""
    vhost = channel.conn.vhost
    committed = vhost.persistence.committed_id if vhost is not None and vhost.persistence else 0
    while waits and waits[0][1] <= committed:
        seq, _, nack = waits.popleft()
        if nack:
            _nack(channel, seq)
    return waits[0][0] - 1 if waits else channel.publish_seq
