"""A connection between its close and the end of its socket, as rabbit_reader keeps it in state ``closed``.

After the client's connection.close, RabbitMQ releases the connection (channels, consumers, exclusive
queues), sends close-ok, and then leaves the socket to the client: ``close_connection/1`` only arms a
``terminate_connection`` timer. The reader keeps reading meanwhile (``handle_frame/4`` when ``?IS_STOPPING``):
a channel-0 method goes to ``handle_method0/2``, which answers another connection.close with close-ok and
ends the connection at a connection.close-ok; every other frame (any channel's, content, heartbeats, other
connection methods) is dropped without a reply. The socket closes when the client closes it, at its close-ok,
or when the timer fires; the heartbeat sender keeps sending meanwhile, and missed heartbeats end nothing.
Checked against RabbitMQ 3.10.8: close-ok, then basic.qos on channel 1, channel.open on 2, a heartbeat and
connection.open had no answer, a second connection.close a second close-ok, the client's close-ok a reset;
held without a word, the socket was reset 30 s after close-ok at heartbeat 0, 2 s at heartbeat 2, 5 s at 5
(with a heartbeat every half interval until then); a frame with a bad frame-end 3 s after it arrived.

A connection the broker closed (connection.close sent, WarrenMQ's state CLOSING) is in the same state in
RabbitMQ (send_error_on_channel0_and_close/4 calls close_connection/1 too), so it answers frames alike: a
client's connection.close after the broker's got close-ok and the socket stayed open (3.10.8, heartbeat 0,
reset 30 s after the broker's close). How long WarrenMQ waits there is ``SessionConfig.close_timeout_s``.
"""

from __future__ import annotations

from typing import Final, Protocol

from pamqp import commands
from pamqp.base import Frame

from protocol.codec import decode_method
from protocol.errors import HardError
from protocol.framing import FRAME_METHOD

# rabbit_reader's ?CLOSING_TIMEOUT: the longest it waits, once closed, for the client to end the connection.
CLOSING_TIMEOUT_S: Final = 30


class ClosedConnection(Protocol):
    """The connection session as this module sees it."""

    def send(self, channel_id: int, method: Frame) -> None: ...

    def abort(self) -> None:
        """Close the socket now, without a close frame."""
        ...


def closing_timeout_s(heartbeat_s: int) -> int:
    """close_connection/1's timer: the negotiated heartbeat (the client's tune-ok value) when it is shorter
    than ``?CLOSING_TIMEOUT``, else ``?CLOSING_TIMEOUT`` (heartbeats off included)."""
    return heartbeat_s if 0 < heartbeat_s < CLOSING_TIMEOUT_S else CLOSING_TIMEOUT_S


def on_frame(connection: ClosedConnection, frame_type: int, channel_id: int, payload: bytes) -> None:
    """A frame that arrived after the connection closed (either side's connection.close): handle_method0/2
    when ``?IS_STOPPING``."""
    if frame_type != FRAME_METHOD or channel_id != 0:
        return
    try:
        method = decode_method(payload)
    except HardError:
        # handle_method0/3 hands a decoding error to handle_exception/3, which in state closed only logs it.
        return
    if isinstance(method, commands.Connection.Close):
        connection.send(0, commands.Connection.CloseOk())  # the socket stays the client's to close
    elif isinstance(method, commands.Connection.CloseOk):
        connection.abort()
