"""What the per-class handlers and the channel's helpers may ask of a channel and of its connection.

Typing only: `ChannelSession` and `ConnectionSession` satisfy these protocols structurally (neither inherits
them), so the handlers, confirms, direct reply-to and the ack timeout depend on this module instead of on the
sessions that call them, and a call through a port is the same attribute lookup on the same object.
Read-only members are properties, so an implementation may hold a more precise type.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from broker.core.queues.queue import ConsumerChannel
from broker.core.topology.persistence import CommitWaiter

if TYPE_CHECKING:
    from pamqp.base import Frame

    from broker.core.access.access import DecisionCache
    from broker.core.broker import Broker
    from broker.core.model.message import Message
    from broker.core.model.stats import ChannelStats
    from broker.core.queues.queue import Consumer, Queue
    from broker.core.queues.unacked import Delivery, UnackedTracker
    from broker.core.topology.vhost import VirtualHost
    from broker.session.config import SessionConfig
    from broker.session.faults import SessionFaults
    from broker.session.heartbeat import HeartbeatMonitor
    from broker.session.lifecycle_events import Endpoint
    from broker.session.transport import Transport
    from broker.session.tx import Transaction
    from protocol.connection import ConnectionState
    from protocol.errors import ChannelError
    from protocol.framing import FrameBuffer


class ConnectionPort(Protocol):
    """A channel's connection: identity, negotiated limits, output, and the vhost it opened."""

    vhost: VirtualHost | None
    username: str
    # rabbit_reader's pid and the socket it was accepted on: the log's connection name.
    pid: str
    endpoint: Endpoint
    client_properties: dict[str, Any]
    consumer_cancel_notify: bool
    # False while the peer's socket buffer is full: no deliveries (read once per delivery).
    writable: bool
    # True once the connection has sent basic.publish: a resource alarm then blocks it (rabbit_reader).
    published: bool
    on_first_publish: Callable[[], None] | None
    flow_credit: int
    frame_max: int
    faults: SessionFaults | None
    # Called in order once the frames read in this turn are handled (after the confirms' flush).
    after_read: list[Callable[[], None]]

    @property
    def broker(self) -> Broker: ...

    @property
    def config(self) -> SessionConfig: ...

    @property
    def peer(self) -> str: ...

    @property
    def channels(self) -> Mapping[int, ChannelPort]:
        """Open and closing channels by number."""
        ...

    @property
    def exclusive_queues(self) -> list[Queue]:
        """Exclusive queues this connection declared: deleted when it closes."""
        ...

    def send(self, channel_id: int, method: Frame) -> None:
        """Encode and write one method frame."""
        ...

    def write(self, data: bytes) -> None:
        """Write encoded frames (held back while `hold_output` waits for a store commit)."""
        ...

    def channel_closed(self, channel_id: int) -> None:
        """The channel is gone (close / close-ok exchanged): its number may be opened again."""
        ...

    def hold_output(self, batch_id: int | None) -> None:
        """Hold every frame written from now on until store batch ``batch_id`` has committed (None: until
        `committed()`)."""
        ...

    def committed(self) -> None:
        """Send what `hold_output` kept, unless a store commit still holds it."""
        ...

    def want_confirm_flush(self, channel: ChannelPort) -> None:
        """Flush ``channel``'s publisher confirms once the frames read in this turn are handled."""
        ...

    def flush_confirms(self) -> None: ...


class HandshakePort(ConnectionPort, Protocol):
    """The connection as the connection-class handler drives it: state, negotiation, login, open, close."""

    state: ConnectionState
    mechanism: str
    peer_cert_login: str | None
    channel_max: int

    @property
    def transport(self) -> Transport: ...

    @property
    def frames(self) -> FrameBuffer: ...

    @property
    def heartbeat(self) -> HeartbeatMonitor: ...

    def opened(self, vhost: VirtualHost) -> None:
        """connection.open succeeded on ``vhost``."""
        ...

    def client_closed(self) -> None:
        """The client sent connection.close."""
        ...

    def connection_lost(self) -> None: ...

    def abort(self) -> None:
        """Close the socket without a close frame."""
        ...


class ChannelPort(ConsumerChannel, CommitWaiter, Protocol):
    """One open channel: its settings, its publisher-confirm and transaction state, its deliveries."""

    prefetch_count: int
    global_prefetch: int
    confirm: bool
    stats: ChannelStats  # message_stats counters (broker.core.model.stats)
    # Publisher confirms (broker.session.confirms): the last publish seq, the seq up to which all are
    # settled on the wire, those settled one by one above it, those to nack at the next flush, those
    # waiting for a store commit, and the last publish a flush sorted.
    publish_seq: int
    confirmed_seq: int
    confirms_settled: set[int]
    confirms_rejected: list[int]
    commit_waits: deque[list[int]]
    confirms_scanned: int
    tx: Transaction | None
    last_queue: str
    reply_key: str
    reply_pid: int  # the pid id of its direct reply names, 0 until its first reply consumer
    pid: str  # the channel's pid in lifecycle events ("" while nothing listens)
    close_crossed: bool  # while closing: the client's channel.close crossed ours and was answered

    @property
    def conn(self) -> ConnectionPort: ...

    @property
    def channel_id(self) -> int: ...

    @property
    def closing(self) -> bool:
        """True once the channel is released: frames other than close / close-ok are dropped."""
        ...

    @property
    def unacked(self) -> UnackedTracker: ...

    @property
    def access(self) -> DecisionCache:
        """This channel's cached authorize() decisions for its user and vhost."""
        ...

    @property
    def consumers(self) -> dict[str, Consumer]: ...

    def route(self, message: Message, mandatory: bool) -> None:
        """Route a published (or tx-committed) message: returns, journal, confirm."""
        ...

    def finish_settle(self, deliveries: list[Delivery], requeue: bool | None) -> None:
        """Apply an ack (``requeue`` None), nack or reject to deliveries already out of the unacked set."""
        ...

    def send_content(self, method_frame: bytes, message: Message) -> None:
        """Write a content method frame followed by the message's header and body frames."""
        ...

    def wake_queues(self) -> None:
        """Prefetch capacity came back: let the queues this channel consumes from dispatch."""
        ...

    def flush_confirms(self) -> None: ...

    def close_with_error(self, error: ChannelError) -> None:
        """Close with channel.close carrying ``error``'s code and text."""
        ...

    def release(self) -> None:
        """Cancel consumers and requeue unacked deliveries (once)."""
        ...
