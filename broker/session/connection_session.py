"""One AMQP connection: frames in, channel sessions, errors turned into close frames (the one error
boundary).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from pamqp import commands
from pamqp.base import Frame

from broker.core.broker import Broker
from broker.core.model.acting import INTERNAL, acting
from broker.core.queues.queue import Queue
from broker.core.topology.vhost import VirtualHost
from broker.session import channel_close, closing, confirms, connection_log, lifecycle_events, preauth
from broker.session.ack_timeout import AckTimeoutWatch
from broker.session.channel_open import open_channel
from broker.session.channel_session import ChannelSession
from broker.session.config import FLOW_INITIAL_CREDIT, SessionConfig
from broker.session.faults import SessionFaults
from broker.session.handlers import connection as connection_handlers
from broker.session.heartbeat import HeartbeatMonitor
from broker.session.lifecycle_events import Endpoint, new_pid
from broker.session.ports import ChannelPort
from broker.session.transport import Transport
from protocol.codec import decode_method, encode_method
from protocol.connection import STOPPING, ConnectionState
from protocol.errors import AMQPError, ChannelError, HardError, ProtocolHeaderError, ReplyCode
from protocol.framing import (
    FRAME_ACK,
    FRAME_ACK_MULTIPLE,
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    FRAME_PUBLISH,
    PROTOCOL_HEADER,
    FrameBuffer,
    failing_method,
    method_payload,
    unexpected_frame,
)
from protocol.header_rewrite import rewrite_content_header

log = structlog.get_logger("warrenmq.connection")
# Enum members read through the class cost several times a module constant's load (Python 3.11); the frame
# loop below tests one per frame.
_OPEN = ConnectionState.OPEN
# Errors rabbit_reader raises itself (method none: class/method 0/0), and 541, a crashed channel's.
_READER_ERRORS = frozenset({ReplyCode.FRAME_ERROR, ReplyCode.UNEXPECTED_FRAME, ReplyCode.INTERNAL_ERROR})


class ConnectionSession:
    """Per-connection AMQP state. The server feeds it bytes and ticks; it writes frames through
    ``transport``. Implements ``broker.session.ports.HandshakePort`` for its channels and handlers."""

    def __init__(
        self,
        broker: Broker,
        config: SessionConfig,
        transport: Transport,
        peer: str = "",
    ) -> None:
        self.broker = broker
        if broker.rewrite_header is None:
            broker.set_header_rewriter(rewrite_content_header)
        self.config = config
        self.transport = transport
        self.peer = peer
        self.state = ConnectionState.AWAITING_PROTOCOL_HEADER
        self.frames = FrameBuffer(config.pre_auth_frame_max, native=True)
        self.channels: dict[int, ChannelSession] = {}
        self.vhost: VirtualHost | None = None
        self.username = ""
        self.mechanism = ""
        # The user name in a verified TLS client certificate (the EXTERNAL mechanism's), set by the edge.
        self.peer_cert_login: str | None = None
        self.client_properties: dict[str, Any] = {}
        # The socket as the edge accepted it, and this connection's pid (connection and channel notices).
        self.endpoint = Endpoint()
        self.pid = new_pid()
        self.frame_max = config.pre_auth_frame_max
        self.channel_max = config.channel_max
        self.heartbeat = HeartbeatMonitor()
        self.writable = True
        self.published = False
        # Called (by the channel) when the connection publishes for the first time: the edge blocks it then
        # if a resource alarm is in effect.
        self.on_first_publish: Callable[[], None] | None = None
        self.flow_credit = FLOW_INITIAL_CREDIT  # spent on slow queues; the edge grants more
        self.ack_timeout: AckTimeoutWatch | None = None
        self.exclusive_queues: list[Queue] = []
        self.consumer_cancel_notify = False
        self._confirm_channels: dict[ChannelPort, None] = {}
        self.after_read: list[Callable[[], None]] = []  # ConnectionPort.after_read
        # Output held back until a store batch commits (tx.commit-ok of stored publishes, and what follows it,
        # keep their order); None when nothing is held.
        self._held: list[bytes] | None = None
        self._held_until = 0
        self._closed = False
        self._close_noticed = False
        # For the log (broker.session.connection_log): bytes have come (the "accepting" line is written),
        # and the connection's last line is written.
        self.data_seen = False
        self._end_logged = False
        self.faults: SessionFaults | None = None  # test fault injection, installed by the edge
        # Offered the octets of a header that is not 0-9-1's; True when it took the connection over (an AMQP
        # 1.0 header on a profile that speaks 1.0: RabbitMQ 4 has one port, the header picks the protocol).
        # Installed by the edge.
        self.on_other_header: Callable[[bytes], bool] | None = None

    # -- input

    def data_received(self, data: bytes) -> None:
        """Parse and handle every complete frame; the only place AMQP errors become close frames."""
        if self._closed:
            return
        self.heartbeat.received = True
        if not self.data_seen:
            self.data_seen = True
            connection_log.accepting(self)
        try:
            frames = self.frames.feed(data)
        except ProtocolHeaderError as error:
            if self.on_other_header is not None and self.on_other_header(error.received):
                # Handed over (rabbit_reader's handshake switches to rabbit_amqp_reader on the 1.0 header):
                # no 0-9-1 connection was opened, so none is logged or torn down.
                self._closed = True
                self._end_logged = True
                self.state = ConnectionState.CLOSED
                return
            # Spec 4.2.2: answer with the header we speak, then close.
            connection_log.bad_header(self, data)
            self._end_logged = True
            self.transport.write(PROTOCOL_HEADER)
            self._shutdown()
            return
        except AMQPError as error:
            if self.state in STOPPING:  # lost sync once closed: fatal_frame_error/5 (broker.session.closing)
                self._closed = True
                self.transport.close(after_s=preauth.SILENT_CLOSE_DELAY_S)
                return
            self.hard_close(error)
            return
        if self.state is ConnectionState.AWAITING_PROTOCOL_HEADER:
            connection_handlers.send_start(self)
        channels = self.channels
        for frame_type, channel_id, payload in frames:
            try:
                if channel_id and self.state is _OPEN:
                    channel = channels.get(channel_id)
                    # A closing channel (we sent channel.close) takes nothing but close/close-ok: content
                    # frames already in flight are dropped, not 505 (rabbit_channel in state closing).
                    if channel is None or channel.closing:
                        self._on_other_channel_frame(frame_type, channel_id, payload)
                    elif frame_type == FRAME_PUBLISH:  # method, header and body of one publish
                        channel.on_publish(payload)
                    elif frame_type == FRAME_ACK:  # a basic.ack, decoded (payload: its delivery tag)
                        channel.on_ack(payload, False)
                    elif frame_type == FRAME_ACK_MULTIPLE:
                        channel.on_ack(payload, True)
                    elif frame_type == FRAME_METHOD:
                        channel.on_method_frame(payload)
                    elif frame_type == FRAME_HEADER:
                        channel.on_header(payload)
                    elif frame_type == FRAME_BODY:
                        channel.on_body(payload)
                    else:
                        self._on_other_channel_frame(frame_type, channel_id, payload)
                else:
                    self._on_connection_frame(frame_type, channel_id, payload)
            except ChannelError as error:
                if not error.class_id:  # raised past the handlers' table: publish content, acks, settles
                    error.class_id, error.method_id = failing_method(frame_type, payload)
                channel = channels.get(channel_id)
                if channel is None or channel_id == 0:
                    hard = HardError(error.code, error.text, error.class_id, error.method_id)
                    self.hard_close(hard, channel_id)
                    return
                channel.close_with_error(error)
            except HardError as error:
                if (
                    channel_id
                    and not error.class_id
                    and error.names_method
                    and error.code not in _READER_ERRORS
                ):
                    # A connection error raised past the handlers' table (a stream's nack or reject: 540)
                    # names its method too; the reader's own errors and crashes keep 0/0, as RabbitMQ's.
                    error.class_id, error.method_id = failing_method(frame_type, payload)
                self.hard_close(error, channel_id)
                return
            except Exception:
                # A bug must not take the broker down: close this connection as RabbitMQ does when a channel
                # process crashes (541), and keep serving the others.
                log.exception("internal_error", peer=self.peer, channel=channel_id)
                self.hard_close(HardError(ReplyCode.INTERNAL_ERROR, "internal error"), channel_id)
                return
            if self._closed:
                return
        if self._confirm_channels:
            self.flush_confirms()
        if self.after_read:
            after, self.after_read = self.after_read, []
            for callback in after:
                callback()

    def _on_other_channel_frame(self, frame_type: int, channel_id: int, payload: Any) -> None:
        if frame_type <= FRAME_PUBLISH:
            # A native item's method frame decides: on a closing channel a publish's header and body are
            # dropped after it, and without a channel it is refused before they are looked at.
            frame_type, payload = method_payload(frame_type, payload)
        channel = self.channels.get(channel_id)
        if frame_type == FRAME_HEARTBEAT:
            raise unexpected_frame(frame_type, payload)
        if frame_type != FRAME_METHOD:
            if channel is not None:
                return  # content for a closing channel: dropped with the rest of its frames
            raise unexpected_frame(frame_type, payload)
        method = decode_method(payload)
        if channel is not None:
            # Closing channel: spec 2.2.4, only channel.close / close-ok are processed.
            channel_close.method_while_closing(channel, method)
            return
        if isinstance(method, commands.Channel.Open):
            self.channels[channel_id] = open_channel(self, channel_id, self.pid)
            return
        index = getattr(method, "index", 0)
        raise HardError(ReplyCode.CHANNEL_ERROR, "expected 'channel.open'", index >> 16, index & 0xFFFF)

    def _on_connection_frame(self, frame_type: int, channel_id: int, payload: Any) -> None:
        if frame_type <= FRAME_PUBLISH:  # a native item: judged by its method frame (505 before open-ok)
            frame_type, payload = method_payload(frame_type, payload)
        if self.state in STOPPING:  # either side closed: rabbit_reader's state closed
            closing.on_frame(self, frame_type, channel_id, payload)
            return
        if frame_type == FRAME_HEARTBEAT:
            if channel_id != 0:
                raise unexpected_frame(frame_type, payload)
            return
        if frame_type != FRAME_METHOD or channel_id != 0:
            # Content on channel 0, or any channel frame before connection.open-ok (rabbit_reader).
            raise unexpected_frame(frame_type, payload)
        try:
            method = decode_method(payload)
        except HardError as error:
            raise preauth.undecodable(self.state, error) from None
        connection_handlers.handle(self, method)

    # -- output

    def send(self, channel_id: int, method: Frame) -> None:
        self.write(encode_method(channel_id, method))

    def write(self, data: bytes) -> None:
        self.heartbeat.sent = True
        if self._held is not None:
            self._held.append(data)
            return
        self.transport.write(data)

    def hold_output(self, batch_id: int | None) -> None:
        """Hold every frame written from now on until store batch ``batch_id`` has committed (None: until
        `committed()`, which sends them unless a commit still holds them)."""
        if self._held is None:
            self._held = []
        persistence = self.vhost.persistence if self.vhost is not None else None
        if batch_id is not None and persistence is not None:
            self._held_until = max(self._held_until, batch_id)
            persistence.on_commit(batch_id, self)

    def committed(self) -> None:
        """CommitWaiter: release held output once the newest batch it waits for has committed."""
        persistence = self.vhost.persistence if self.vhost is not None else None
        if self._held is None or (persistence is not None and persistence.committed_id < self._held_until):
            return
        held, self._held = self._held, None
        if not self._closed:
            for data in held:
                self.transport.write(data)

    def channel_closed(self, channel_id: int) -> None:
        self.channels.pop(channel_id, None)

    def want_confirm_flush(self, channel: ChannelPort) -> None:
        self._confirm_channels[channel] = None

    def flush_confirms(self) -> None:
        channels = self._confirm_channels
        self._confirm_channels = {}
        confirms.flush_channels(channels)

    # -- lifecycle

    def opened(self, vhost: VirtualHost) -> None:
        self.vhost = vhost
        self.state = ConnectionState.OPEN
        vhost.connections[self] = None
        vhost.churn.connection_created += 1
        if self.broker.events.notices:
            opened = lifecycle_events.Opened(
                self.endpoint,
                self.pid,
                self.username,
                vhost.name,
                self.mechanism,
                self.client_properties,
                self.channel_max,
                self.frame_max,
                self.heartbeat.interval_s,
            )
            lifecycle_events.connection_created(self.broker, opened)
        timeout_ms = self.config.consumer_timeout_ms
        if timeout_ms > 0:
            self.ack_timeout = AckTimeoutWatch(
                self, self.broker.clock, timeout_ms, self.broker.profile.consumer_timeout_classic
            )
            self.ack_timeout.start()

    def hard_close(self, error: AMQPError, channel_id: int = 0) -> None:
        """Send connection.close with RabbitMQ's code and text, await close-ok; channels go down now.
        ``channel_id``: the channel whose frame raised it (the log names it)."""
        if self.state in (ConnectionState.CLOSING, ConnectionState.CLOSED):
            return
        if preauth.closes_silently(self.state, error):
            # rabbit_reader before open-ok: no close frame, the socket dropped after ?SILENT_CLOSE_DELAY.
            connection_log.handshake_error(self, error)
            self._end_logged = True
            self._teardown()
            self._closed = True
            self.state = ConnectionState.CLOSED
            self.transport.close(after_s=preauth.SILENT_CLOSE_DELAY_S)
            return
        if not (error.code is ReplyCode.ACCESS_REFUSED and self.state in preauth.LOGIN_STATES):
            connection_log.connection_error(self, channel_id, error)  # a refused login is logged already
        self._teardown()
        self.state = ConnectionState.CLOSING
        self.send(
            0,
            commands.Connection.Close(
                reply_code=int(error.code),
                reply_text=error.reply_text,
                class_id=error.class_id,
                method_id=error.method_id,
            ),
        )
        self.transport.close(after_s=self.config.close_timeout_s)

    def force_close(self, text: str = "broker forced connection closure with reason 'shutdown'") -> None:
        """Broker-initiated close (shutdown, management): 320 CONNECTION_FORCED as RabbitMQ sends it."""
        if self.state is ConnectionState.OPEN:
            self.hard_close(HardError(ReplyCode.CONNECTION_FORCED, text))
        else:
            self._shutdown()

    def client_closed(self) -> None:
        """The client sent connection.close: tear down, answer close-ok, and leave the socket to the client
        until the closing timeout, as rabbit_reader's close_connection/1 (broker.session.closing)."""
        self._teardown()
        self.send(0, commands.Connection.CloseOk())
        self.state = ConnectionState.CLOSED
        self.transport.close(after_s=closing.closing_timeout_s(self.heartbeat.interval_s))

    def connection_lost(self) -> None:
        """The socket is gone (either side): release everything the connection held."""
        if not self._end_logged:
            self._end_logged = True
            if not self.data_seen:
                connection_log.accepting(self, data=False)
            connection_log.closed(self, self.data_seen)
        self._teardown()
        self._closed = True
        self.state = ConnectionState.CLOSED

    def handshake_timed_out(self) -> None:
        """rabbit_reader's handshake_timeout: not open in time; the edge closes the socket."""
        if not self._end_logged:
            self._end_logged = True
            connection_log.handshake_timeout(self)
        self.connection_lost()

    def abort(self) -> None:
        """Close the socket without a close frame (failed login of a client without
        authentication_failure_close; the client's close-ok once closed).
        """
        self._shutdown()

    def _shutdown(self) -> None:
        self._teardown()
        self._closed = True
        self.state = ConnectionState.CLOSED
        self.transport.close()

    def _teardown(self) -> None:
        """Requeue unacked messages, cancel consumers, delete exclusive queues: once per connection."""
        if self.ack_timeout is not None:
            self.ack_timeout.stop()
            self.ack_timeout = None
        channels = list(self.channels.values())
        self.channels.clear()
        self.after_read.clear()
        # Consumers and exclusive queues go because the connection went: rabbit_amqqueue_process's
        # terminated_by/1 names ?INTERNAL_USER for that.
        with acting(INTERNAL):
            for channel in channels:
                channel.release()
            if self.vhost is not None:
                if self in self.vhost.connections:
                    self.vhost.churn.connection_closed += 1
                self.vhost.connections.pop(self, None)
                for queue in self.exclusive_queues:
                    if self.vhost.queues.get(queue.name) is queue:
                        self.vhost.remove_queue(queue)
        self.exclusive_queues.clear()
        if self.mechanism and not self._close_noticed and self.broker.events.notices:
            # rabbit_reader sends connection_closed once it has read start-ok (a refused login too).
            lifecycle_events.connection_closed(self.broker, self.endpoint, self.pid, self.client_properties)
        self._close_noticed = True

    # -- edge notifications

    def set_writable(self, writable: bool) -> None:
        """Socket backpressure: no deliveries while the peer's buffer is full; on resume, wake the queues."""
        self.writable = writable
        if writable:
            for channel in self.channels.values():
                channel.wake_queues()

    def heartbeat_tick(self) -> None:
        """Called every heartbeat_s / 2 by the edge's timer from tune-ok on (broker.session.heartbeat)."""
        if self._closed:
            return
        if self.heartbeat.peer_dead() and self.state not in STOPPING:  # once closed: broker.session.closing
            # As rabbit_reader: the socket is closed without a connection.close.
            connection_log.missed_heartbeats(self, self.heartbeat.interval_s)
            self._end_logged = True
            self._shutdown()
            return
        if self.heartbeat.should_send():
            faults = self.faults
            if faults is not None and self.vhost is not None and faults.drops_heartbeats(self.vhost.name):
                return
            # Straight to the socket: not activity for the next tick, and not held behind a store commit.
            self.transport.write(connection_handlers.HEARTBEAT)
