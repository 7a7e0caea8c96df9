"""A link on which the client receives (its receiver, our sender): a consumer of a queue, fed by link credit.

As RabbitMQ 4.0.5's rabbit_amqp_session: the source must be `/queues/:queue` (anything else ends the session
with amqp:invalid-field, a missing queue with amqp:not-found); the attach it answers offers the four outcomes
with released as the default and starts the delivery-count at 2^32 - 5; snd-settle-mode settled consumes
without acknowledgements (at-most-once); each transfer carries the message converted from the core's AMQP
0-9-1 form (``broker.session.amqp10.convert``), and the client's disposition settles it. A stream queue is
read from the offset and with the filter of the source's filter-set (``broker.session.amqp10.stream_source``),
each transfer annotated with its ``x-stream-offset``; every outcome settles a stream delivery alike."""

from __future__ import annotations

import struct
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from broker.core.model.protocol_counters import queue_type_of
from broker.core.queues.queue import Consumer
from broker.core.queues.queue_admin import add_consumer, remove_consumer
from broker.core.queues.unacked import Delivery
from broker.core.streams.lookup import stream_of
from broker.session.amqp10 import addresses, stream_source
from broker.session.amqp10.convert import Amqp10Message, amqp10_payload, from_amqp091
from broker.session.amqp10.errors import (
    INVALID_FIELD,
    UNAUTHORIZED_ACCESS,
    SessionError,
    condition_of,
)
from broker.session.amqp10.modified import delivery_failures
from broker.session.amqp10.v1_queues import declare_v1_queue
from broker.session.fates import stored_delivery
from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Released
from protocol.amqp10.frames import FRAME_HEADER_SIZE, encode_frame
from protocol.amqp10.performatives import (
    SND_SETTLED,
    SND_UNSETTLED,
    Attach,
    Detach,
    Flow,
    Transfer,
    encode_performative,
)
from protocol.amqp10.terminus import Source
from protocol.amqp10.types import Symbol, UByte, UInt
from protocol.errors import AMQPError

if TYPE_CHECKING:
    from broker.core.model.envelope import Envelope
    from broker.core.queues.queue import Queue
    from broker.core.streams.stream_queue import StreamPath
    from broker.session.amqp10.ports import SessionPort

_UINT: Final = 2**32
INITIAL_DELIVERY_COUNT: Final = _UINT - 5
_OUTCOMES: Final = (
    Symbol("amqp:accepted:list"),
    Symbol("amqp:rejected:list"),
    Symbol("amqp:released:list"),
    Symbol("amqp:modified:list"),
)
_TAG: Final = struct.Struct(">I")


class OutgoingLink:
    """Implements the core's ``ConsumerChannel`` for the consumer it owns."""

    def __init__(
        self,
        session: SessionPort,
        attach: Attach,
        queue: Queue,
        source: Source,
        stream: StreamPath | None = None,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.session = session
        self.handle = attach.handle
        self.attach_frame = attach
        self.source = source
        self.queue = queue
        self.settled = attach.snd_settle_mode == SND_SETTLED
        self.delivery_count = INITIAL_DELIVERY_COUNT
        self.credit = 0
        self.drain = False
        self.stream = stream  # the queue's stream reader, when the queue is a stream
        self.queue_type = queue_type_of(queue.arguments)  # the global counters' key
        self.consumer = Consumer(
            f"ctag-{session.channel}-{attach.handle}", queue, self, self.settled, False, 0, arguments
        )
        self._detached = False

    @classmethod
    def attach(cls, session: SessionPort, attach: Attach) -> OutgoingLink:
        source = attach.source
        raw = source.address if isinstance(source, Source) else None
        address = (addresses.parse(raw) or addresses.parse_v1(raw)) if raw is not None else None
        if address is None or address.queue is None:
            raise SessionError(INVALID_FIELD, f'Attach rejected: {{unknown_destination,"{raw}"}}')
        vhost = session.vhost
        if address.declare:
            declare_v1_queue(session, address)
        try:
            # Missing, or exclusive to another connection (resource-locked), as for basic.consume.
            queue = vhost.queue(address.queue, session.conn)
        except AMQPError as error:
            raise SessionError(condition_of(error), error.text) from None
        if not session.access.allowed("queue", queue.name, "read"):
            raise SessionError(
                UNAUTHORIZED_ACCESS,
                f"read access to queue '{queue.name}' in vhost '{vhost.name}' refused for user "
                f"'{session.conn.username}'",
            )
        assert isinstance(source, Source)
        stream = stream_of(queue)
        if stream is None:
            return cls(session, attach, queue, source)
        # A stream is read by the core's stream reader from the offset and with the filter the source's
        # filter-set asks for, as a 0-9-1 consumer's arguments ask (RabbitMQ 4.0.5 reads them likewise).
        arguments = stream_source.consume_arguments(source.filter)
        stream_source.check_offset(stream, queue, arguments)
        return cls(session, attach, queue, source, stream, arguments)

    def attached(self) -> None:
        attach = self.attach_frame
        self.session.send(
            Attach(
                name=attach.name,
                handle=UInt(self.handle),
                role=False,
                # rabbit_amqp_session's effective mode: settled when asked, unsettled otherwise (mixed too).
                snd_settle_mode=UByte(SND_SETTLED if self.settled else SND_UNSETTLED),
                rcv_settle_mode=UByte(0),
                # The client's source echoed (its filter-set whole, read or not, as 4.0.5 does), with released
                # as the only default outcome (what a lost session does to its deliveries) and the outcomes
                # supported.
                source=replace(self.source, default_outcome=Released(), outcomes=_OUTCOMES),
                initial_delivery_count=UInt(self.delivery_count),
                max_message_size=attach.max_message_size,  # echoed, as 4.0.5 does
            )
        )
        add_consumer(self.queue, self.consumer)

    # -- credit (part 2, 2.6.7)

    def on_flow(self, flow: Flow) -> None:
        if flow.link_credit is not None:
            # The receiver's view: credit counts from its delivery-count, which may lag ours.
            receiver_count = (
                flow.delivery_count if flow.delivery_count is not None else INITIAL_DELIVERY_COUNT
            )
            self.credit = max(0, (receiver_count + flow.link_credit - self.delivery_count) % _UINT)
            if self.credit > _UINT // 2:
                self.credit = 0
        self.drain = bool(flow.drain)
        if flow.echo:
            self._send_flow()
        self.queue.wake()

    def _send_flow(self) -> None:
        self.session.send(
            self.session.flow(
                handle=UInt(self.handle),
                delivery_count=UInt(self.delivery_count),
                link_credit=UInt(self.credit),
                available=UInt(self._available()),
                drain=self.drain,
            )
        )

    def _available(self) -> int:
        """What the queue holds for this link: a stream's offsets ahead of its reader, else the queue's."""
        if self.stream is not None:
            return self.stream.available(self.consumer)
        return self.queue.message_count

    def after_read(self) -> None:
        """A drain the queue could not fill: the rest of the credit is spent, and the flow says so."""
        if self.drain and self.credit > 0:
            self.queue.dispatcher.catch_up(self.queue)
            if self.drain and self.credit > 0:
                self.delivery_count = (self.delivery_count + self.credit) % _UINT
                self.credit = 0
                self._send_flow()
                self.drain = False

    def wake(self) -> None:
        self.queue.wake()

    # -- ConsumerChannel

    def can_deliver(self, consumer: Consumer) -> bool:
        session = self.session
        return (
            not self._detached
            and self.credit > 0
            and session.remote_incoming_window > 0
            and session.conn.writable
        )

    def deliver(self, consumer: Consumer, queue: Queue, envelope: Envelope) -> None:
        session = self.session
        delivery_id = session.next_delivery_id
        session.next_delivery_id = (delivery_id + 1) % _UINT
        message = envelope.message
        if self.settled:
            queue.stats.deliver_no_ack += 1
        else:
            session.unacked.track(Delivery(delivery_id, queue, envelope, consumer))
            queue.stats.deliver += 1
        session.conn.broker.amqp10_counters.delivered(self.queue_type, self.settled, envelope.redelivered)
        if queue.store is not None and message.delivery_mode == 2:
            stored_delivery(queue, envelope, self.settled)
        # The header's delivery-count counts failed deliveries (modified with delivery-failed), which only a
        # quorum queue keeps (its x-delivery-count, which counts every return, goes in the message
        # annotations); 0 from any other queue, as RabbitMQ 4.0.5 sends.
        delivery_count = delivery_failures(envelope)
        if isinstance(message, Amqp10Message):
            payload = amqp10_payload(message, envelope.redelivered, delivery_count)
        else:
            payload = from_amqp091(
                message.header_payload,
                message.body,
                message.exchange,
                message.routing_key,
                envelope.redelivered,
                delivery_count,
            )
        transfer = Transfer(
            handle=UInt(self.handle),
            delivery_id=UInt(delivery_id),
            # 4.0.5 tags a settled (at-most-once) delivery with the empty binary: nothing will refer to it.
            delivery_tag=b"" if self.settled else _TAG.pack(delivery_id),
            message_format=UInt(0),
            settled=self.settled,
        )
        frames = self._frames(transfer, payload)
        session.next_outgoing_id = (session.next_outgoing_id + len(frames)) % _UINT
        session.remote_incoming_window -= len(frames)
        self.delivery_count = (self.delivery_count + 1) % _UINT
        self.credit -= 1
        session.conn.write(b"".join(frames))
        if self.drain and self.credit == 0:
            self._send_flow()
            self.drain = False

    def _frames(self, transfer: Transfer, payload: bytes) -> list[bytes]:
        """The transfer's frames: one while it fits the client's max-frame-size, else more=true ones."""
        channel = self.session.channel
        whole = encode_performative(transfer, payload)
        limit = self.session.conn.peer_max_frame_size - FRAME_HEADER_SIZE
        if len(whole) <= limit:
            return [encode_frame(whole, channel)]
        frames = []
        head = len(encode_performative(replace(transfer, more=True)))
        step = max(1, limit - head - 8)
        for start in range(0, len(payload), step):
            last = start + step >= len(payload)
            part = (
                replace(transfer, more=not last)
                if start == 0
                else Transfer(handle=transfer.handle, more=not last)
            )
            frames.append(encode_frame(encode_performative(part, payload[start : start + step]), channel))
        return frames

    def consumer_cancelled(self, consumer: Consumer) -> None:
        """The queue was deleted: the link is detached with amqp:resource-deleted (RabbitMQ 4)."""
        if self._detached:
            return
        self._detached = True
        self.session.links.pop(self.handle, None)
        self.session.send(
            Detach(
                handle=UInt(self.handle),
                closed=True,
                error=Error(condition=Symbol("amqp:resource-deleted")),  # no description, as 4.0.5
            )
        )

    def detached(self) -> None:
        """The client detached, or the session ended: the consumer goes, and the deliveries it left unsettled
        go back to the queue (RabbitMQ 4.0.5 requeues them at detach)."""
        if not self._detached:
            self._detached = True
            remove_consumer(self.queue, self.consumer)
        self.session.requeue_unsettled(self.consumer)
