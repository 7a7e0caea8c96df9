"""One AMQP channel: the publish → route and deliver → ack hot path, and dispatch of every other method.

Hot methods (basic.publish/ack/nack/reject) are decoded by protocol.fastpath without pamqp (hot-path rule 2);
the rest go through pamqp and the per-class handler modules.
"""

from __future__ import annotations

import struct
from typing import Any, cast

from pamqp import commands
from pamqp.base import Frame

from broker.core.access.access import DecisionCache
from broker.core.model.acting import ACTOR
from broker.core.model.message import Message
from broker.core.model.stats import ChannelStats
from broker.core.queues.queue import Consumer, Envelope, Queue
from broker.core.queues.unacked import Delivery, UnackedTracker
from broker.core.streams.lookup import stream_outcomes
from broker.session import channel_close, confirms, direct_reply, reply_names, settlement
from broker.session.access_checks import check_publish
from broker.session.confirm_state import PublisherConfirms
from broker.session.durable_replies import answer_when_durable, answers_when_durable
from broker.session.fates import (
    delivered_event,
    published_events,
    stored_delivery,
)
from broker.session.handlers.table import HANDLERS
from broker.session.ports import ConnectionPort
from broker.session.publish_checks import check_exchange, checked_properties
from broker.session.tx import Transaction
from protocol.channel_state import AssemblerState, ContentAssembler
from protocol.codec import BASIC_ACK, BASIC_NACK, BASIC_PUBLISH, BASIC_REJECT, decode_method, encode_delivery
from protocol.content_header import HeaderInfo, read_content_header
from protocol.errors import ChannelError, HardError, ReplyCode
from protocol.fastpath import (
    decode_basic_ack,
    decode_basic_nack,
    decode_basic_publish,
    decode_basic_reject,
    encode_basic_deliver_content,
    encode_basic_return,
    untrack,
)

# Method frames are at least 4 bytes (protocol.framing); module constants: cheaper than Enum/int lookups.
_METHOD_ID = struct.Struct("!I").unpack_from
_IDLE = AssemblerState.IDLE
# basic.publish's exchange, routing key and mandatory flag, held by the assembler until its content completes.
# A typed tuple, not Any: compiled, it unpacks by index (as Any it took an iterator object per publish, ~5% of
# the loop thread's samples in perf/ab.py's persistent confirms).
PublishContext = tuple[str, str, bool]


class ChannelSession(PublisherConfirms):
    """Implements ``broker.session.ports.ChannelPort`` (so ``ConsumerChannel`` for its consumers)."""

    def __init__(self, connection: ConnectionPort, channel_id: int) -> None:
        super().__init__()
        self.conn = connection
        self.channel_id = channel_id
        self.pid = ""  # set by the connection when something listens to channel notices
        self.closing = False
        self.close_crossed = False  # the client's channel.close crossed ours and was answered
        self.assembler = ContentAssembler(connection.config.max_message_size)
        self.unacked = UnackedTracker()
        self.consumers: dict[str, Consumer] = {}
        self.prefetch_count = 0
        self.global_prefetch = 0
        self.tx: Transaction | None = None
        self.last_queue = ""
        self.reply_key = ""  # this channel's direct reply-to key, when it has a reply consumer
        self.reply_pid = 0  # the pid id its reply names carry (broker.session.direct_reply); 0: none yet
        self.stats = ChannelStats()  # message_stats: increments only (hot-path rule 7)
        # The connection's frame_max, read once: connection.tune-ok fixes it before connection.open, so
        # before any channel opens (rabbit_reader refuses channel frames until open-ok). A Python int (Any),
        # as every delivery passes it to the C encoder: read through ConnectionPort per delivery, the
        # compiled connection's int was boxed twice per delivery (its getter, then the call).
        self.frame_max: Any = connection.frame_max
        # Whether the connection's first-publish hook has run (`_on_content`). Compiled, a test of this and a
        # direct call cost less than a bound method held in an attribute would (called through the method's
        # Python wrapper, per publish).
        self._hooked = connection.published
        # This channel's authorize() answers (rabbit_channel keeps a permission cache per channel too).
        vhost = connection.vhost
        self.access = DecisionCache(
            connection.broker.access, connection.username, vhost.name if vhost is not None else ""
        )

    def __repr__(self) -> str:
        return f"ChannelSession({self.channel_id})"

    # -- frames in

    def on_method_frame(self, payload: bytes) -> None:
        assembler = self.assembler
        if assembler.state is not _IDLE:
            assembler.on_method()
        method_id = _METHOD_ID(payload)[0]
        if method_id == BASIC_PUBLISH:
            exchange, routing_key, mandatory, immediate = decode_basic_publish(payload)
            if immediate:
                raise HardError(ReplyCode.NOT_IMPLEMENTED, "immediate=true", 60, 40)
            assembler.expect((exchange, routing_key, mandatory))
        elif method_id == BASIC_ACK:
            tag, multiple = decode_basic_ack(payload)
            self.settle(tag, multiple, None)
        elif method_id == BASIC_NACK:
            tag, multiple, requeue = decode_basic_nack(payload)
            self.settle(tag, multiple, requeue)
        elif method_id == BASIC_REJECT:
            tag, requeue = decode_basic_reject(payload)
            self.settle(tag, False, requeue)
        else:
            self.on_method(decode_method(payload))

    def on_publish(self, frames: tuple[bytes, bytes, bytes]) -> None:
        """basic.publish with its content header and whole body, grouped by the native frame scanner: what
        on_method_frame, on_header and on_body do in turn, in one call while the channel is idle and the
        message is within the size limit; anything else takes those three steps."""
        method, header, body = frames
        assembler = self.assembler
        if assembler.state is _IDLE:
            exchange, routing_key, mandatory, immediate = decode_basic_publish(method)
            if not immediate:
                info, header = read_content_header(header)
                if info.body_size <= assembler.limit:
                    self._on_content((exchange, routing_key, mandatory), info, header, body)
                    return
        self.on_method_frame(method)
        self.on_header(header)
        if body:
            self.on_body(body)

    def on_ack(self, delivery_tag: int, multiple: bool) -> None:
        """basic.ack as the native frame scanner decodes it: what on_method_frame does for one."""
        if self.assembler.state is not _IDLE:
            self.assembler.on_method()
        self.settle(delivery_tag, multiple, None)

    def on_method(self, method: Frame) -> None:
        token = ACTOR.set(self.conn.username)  # who acts, while the handler runs (broker.core.model.acting)
        # An error's class/method ids are filled from its frame at the connection's one error boundary
        # (ConnectionSession.data_received, protocol.framing.failing_method).
        try:
            if (handler := HANDLERS.get(type(method))) is None:
                raise HardError(ReplyCode.COMMAND_INVALID, "unimplemented method")
            vhost = self.conn.vhost
            if vhost is not None and vhost.persistence and answers_when_durable(method.index):
                answer_when_durable(self, handler, method, vhost.persistence)
            else:
                handler(self, method)
        finally:
            ACTOR.reset(token)

    def on_header(self, payload: bytes) -> None:
        done = self.assembler.on_header(payload)
        if done is not None:
            context, info, header_payload, body = done
            self._on_content(cast(PublishContext, context), info, header_payload, body)

    def on_body(self, payload: bytes) -> None:
        done = self.assembler.on_body(payload)
        if done is not None:
            context, info, header_payload, body = done
            self._on_content(cast(PublishContext, context), info, header_payload, body)

    # -- publishing

    def _on_content(
        self, context: PublishContext, info: HeaderInfo, header_payload: bytes, body: bytes
    ) -> None:
        if not self._hooked:
            self._hooked = True
            conn = self.conn
            if not conn.published:
                conn.published = True
                if conn.on_first_publish is not None:
                    conn.on_first_publish()
        self._published(context, info, header_payload, body)

    def _published(
        self, context: PublishContext, info: HeaderInfo, header_payload: bytes, body: bytes
    ) -> None:
        exchange, routing_key, mandatory = context
        access = self.access
        # rabbit_channel basic.publish: write on the exchange first, the routing key on a topic exchange
        # after the exchange's existence. Approved exchanges cost one dict lookup while nothing changes.
        if access.publishable.get(exchange) != access.control.version:
            check_publish(self, exchange, routing_key)
        ttl = None
        headers = info.headers  # checked only for CC/BCC: a message with other headers skips the call
        if (
            info.reply_to is not None
            or info.user_id is not None
            or info.expiration is not None
            or (headers is not None and ("CC" in headers or "BCC" in headers))
        ):
            header_payload, ttl = checked_properties(self, exchange, info, header_payload)
        message = Message(
            exchange,
            routing_key,
            header_payload,
            body,
            info.headers,
            info.delivery_mode or 1,
            info.priority,
            info.expiration,
            ttl,
        )
        untrack(message)  # never in a reference cycle: no cost to the collector (protocol/_wire.c)
        if self.tx is not None:
            check_exchange(self, exchange)  # refused at publish, as RabbitMQ does, not at tx.commit
            self.tx.publishes.append((message, mandatory))
            return
        self.route(message, mandatory)

    def route(self, message: Message, mandatory: bool) -> None:
        vhost = self.conn.vhost
        assert vhost is not None
        persistence = vhost.persistence
        writes = persistence.writes if persistence is not None else 0
        if not message.exchange and message.routing_key.startswith(reply_names.PREFIX):
            direct_reply.deliver_reply(self, message)
            queues: list[Queue] = []  # a direct reply is not routed to a queue: mandatory returns it (3.x)
            rejected = False
        else:
            lagging = vhost.lagging_copies
            queues, rejected = vhost.publish(message.exchange, message)
            if vhost.lagging_copies != lagging:  # copies into queues whose consumers lag: flow credit
                self.conn.flow_credit -= vhost.lagging_copies - lagging
        stats = self.stats
        stats.publish += 1
        events = vhost.events
        if events.stepping:
            journal = events.journal
            if journal is not None:
                journal.published(vhost.name, message, queues, mandatory, self.channel_id, self.conn.peer)
            if events.hot_observers:
                published_events(
                    events, vhost.name, message, queues, mandatory, self.channel_id, self.conn.peer
                )
            if events.tracer is not None:
                events.tracer.published(self, vhost, message, queues)
        if not queues:
            if mandatory:
                stats.return_unroutable += 1
            else:
                stats.drop_unroutable += 1
        if not queues and mandatory:
            # basic.return goes out before the confirm (confirms.md), which confirms.published sends.
            self.send_content(
                encode_basic_return(
                    self.channel_id,
                    int(ReplyCode.NO_ROUTE),
                    "NO_ROUTE",
                    message.exchange,
                    message.routing_key,
                ),
                message,
            )
        if self.confirm:
            stored = persistence is not None and persistence.writes != writes
            confirms.published(self, vhost, queues, rejected, stored)

    def committed(self) -> None:
        """A store batch this channel waits for has committed (CommitWaiter)."""
        if not self.closing:
            self.conn.want_confirm_flush(self)
            self.conn.flush_confirms()

    def flush_confirms(self) -> None:
        confirms.flush(self)

    # -- delivering (ConsumerChannel)

    def can_deliver(self, consumer: Consumer) -> bool:
        if not self.conn.writable:
            return False
        if consumer.no_ack:
            return True
        if consumer.prefetch_count and consumer.unacked >= consumer.prefetch_count:
            return False
        return not (self.global_prefetch and len(self.unacked) >= self.global_prefetch)

    def deliver(self, consumer: Consumer, queue: Queue, envelope: Envelope) -> None:
        tracker = self.unacked
        tag = tracker.next_tag
        tracker.next_tag = tag + 1
        stats, queue_stats = self.stats, queue.stats
        if consumer.no_ack:
            stats.deliver_no_ack += 1
            queue_stats.deliver_no_ack += 1
        else:
            tracker.track(Delivery(tag, queue, envelope, consumer))
            stats.deliver += 1
            queue_stats.deliver += 1
        if envelope.redelivered:
            stats.redeliver += 1
            queue_stats.redeliver += 1
        message = envelope.message
        if queue.store is not None and message.delivery_mode == 2:
            stored_delivery(queue, envelope, consumer.no_ack)
        events = queue.events
        if events is not None and events.stepping:
            journal = events.journal
            if journal is not None and message.journal is not None:
                journal.delivered(queue, envelope, tag, consumer.no_ack)
            if events.hot_observers:
                delivered_event(queue, envelope, tag, consumer.consumer_tag, consumer.no_ack)
            if events.tracer is not None:
                events.tracer.delivered(self, queue, envelope)
        conn = self.conn
        frames = encode_basic_deliver_content(  # one write per delivery
            self.channel_id,
            consumer.consumer_tag,
            tag,
            envelope.redelivered,
            message.exchange,
            message.routing_key,
            message.header_payload,
            message.body,
            self.frame_max,
        )
        conn.write(frames)

    def send_content(self, method_frame: bytes, message: Message) -> None:
        conn = self.conn
        conn.write(
            encode_delivery(
                method_frame, self.channel_id, message.header_payload, message.body, self.frame_max
            )
        )

    def consumer_cancelled(self, consumer: Consumer) -> None:
        """The queue was deleted: drop the consumer and tell clients that understand basic.cancel. For the
        deleting channel's own consumers this runs once the read is handled (broker.session.held_deliveries):
        one the client cancelled meanwhile, its tag perhaps reused, is left alone, as rabbit_channel cancels
        only the consumers its queue_consumers still maps to the queue."""
        tag = consumer.consumer_tag
        if self.closing or self.consumers.get(tag) is not consumer:
            return
        del self.consumers[tag]
        if self.conn.consumer_cancel_notify:
            self.conn.send(
                self.channel_id, commands.Basic.Cancel(consumer_tag=consumer.consumer_tag, nowait=True)
            )

    # -- acknowledgements

    def settle(self, delivery_tag: int, multiple: bool, requeue: bool | None) -> None:
        """basic.ack (``requeue`` None), nack or reject. In a transaction the outcome waits for tx.commit."""
        vhost = self.conn.vhost
        if (
            requeue is None
            and not multiple
            and self.tx is None
            and not self.global_prefetch
            and vhost is not None
            and not vhost.events.stepping
        ):
            # One ack with nothing observing settlements (a consumer acking each message): what the general
            # path below does for it, without the lists it builds for many.
            delivery = self.unacked.settle_one(delivery_tag)
            queue = delivery.queue
            self.stats.ack += 1
            queue.stats.ack += 1
            if vhost.persistence is not None and queue.store is not None:
                queue.store.messages_removed(queue, (delivery.envelope,))
            queue.wake()
            return
        deliveries = self.unacked.settle(delivery_tag, multiple)
        settled = deliveries
        if requeue is not None:
            any_outcome = vhost is not None and vhost.profile.stream_settle_any_outcome
            settled, as_acks = stream_outcomes(deliveries, any_outcome)
            if as_acks:
                self.apply_outcome(as_acks, None)
        if settled:
            self.apply_outcome(settled, requeue)
        settlement.wake_queues_of(self, deliveries)

    def apply_outcome(self, deliveries: list[Delivery], requeue: bool | None) -> None:
        """Apply an outcome now, or at tx.commit in a transaction."""
        if self.tx is not None:
            self.tx.settlements.append((deliveries, requeue))
        else:
            self.finish_settle(deliveries, requeue)

    def finish_settle(self, deliveries: list[Delivery], requeue: bool | None) -> None:
        settlement.finish_settle(self, deliveries, requeue)

    def wake_queues(self) -> None:
        for queue in {consumer.queue for consumer in self.consumers.values()}:
            queue.wake()

    # -- lifecycle

    def close_with_error(self, error: ChannelError) -> None:
        """Soft error: earned confirms first, then channel.close (broker.session.channel_close)."""
        channel_close.close_with_error(self, error)

    def release(self) -> None:
        """Cancel consumers, then requeue every unacked delivery; once (broker.session.channel_close)."""
        if not self.closing:
            self.closing = True
            channel_close.release(self)
