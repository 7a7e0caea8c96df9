"""channel.open on a connection: the channel_max and per-user channel limits, the new ChannelSession, its
channel_created notice and channel.open-ok (rabbit_reader's create_channel)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from broker.session import lifecycle_events
from broker.session.channel_session import ChannelSession
from broker.session.lifecycle_events import new_pid
from broker.session.limits import check_channel_limit
from protocol.codec import make_method
from protocol.errors import HardError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import HandshakePort

# channel.open-ok's reserved long string is empty, as RabbitMQ sends it (rabbit_framing's default <<>>), not
# pamqp's "0": a strict client that skips exactly four bytes there loses its place in the stream.
CHANNEL_OPEN_OK = make_method(commands.Channel.OpenOk, channel_id="")


def open_channel(session: HandshakePort, channel_id: int, connection_pid: str) -> ChannelSession:
    """Open ``channel_id`` (not open yet) on ``session``, answer channel.open-ok; the caller keeps the
    channel."""
    # rabbit_reader create_channel: the limit counts the channels open (a closing one until its close-ok),
    # not the number the client picks (3.10.8 and 4.0.5 open channel 65535 under channel_max 2047); the
    # amqp_error names no method, so the close carries class and method 0.
    opened = len(session.channels)
    if session.channel_max and opened >= session.channel_max:
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"number of channels opened ({opened}) has reached the negotiated channel_max "
            f"({session.channel_max})",
            names_method=False,
        )
    check_channel_limit(session.broker, session.username)
    channel = ChannelSession(session, channel_id)
    vhost = session.vhost
    if vhost is not None:
        vhost.churn.channel_created += 1
        if session.broker.events.notices:
            channel.pid = new_pid()
            lifecycle_events.channel_created(
                session.broker,
                session.endpoint,
                connection_pid,
                channel.pid,
                channel_id,
                session.username,
                vhost.name,
            )
    session.send(channel_id, CHANNEL_OPEN_OK)
    return channel
