"""A link on which the client sends (its sender, our receiver): transfers become publishes into the core.

As RabbitMQ 4.0.5's rabbit_amqp_session: the target is a v2 address checked at attach (a missing queue or
exchange ends the session with amqp:not-found), or null, when each message's ``to`` names its address; the
link gets 170 credits at attach and 170 again once half are spent; an unsettled transfer is settled with
accepted once routed, released when no queue took it, rejected when its exchange is gone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.session.amqp10 import addresses
from broker.session.amqp10.convert import Amqp10Message, to_amqp091
from broker.session.amqp10.errors import (
    INVALID_FIELD,
    MESSAGE_SIZE_EXCEEDED,
    NOT_FOUND,
    PRECONDITION_FAILED,
    UNAUTHORIZED_ACCESS,
    LinkError,
    SessionError,
    condition_of,
)
from broker.session.amqp10.link_base import QuietLink
from broker.session.amqp10.v1_queues import declare_v1_queue
from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted, DeliveryState, Rejected, Released
from protocol.amqp10.message import decode_message
from protocol.amqp10.performatives import Attach, Flow, Transfer
from protocol.amqp10.terminus import Target
from protocol.amqp10.types import Symbol, UByte, UInt, ULong
from protocol.errors import AMQPError

if TYPE_CHECKING:
    from broker.core.model.protocol_counters import ProtocolCounters
    from broker.session.amqp10.ports import SessionPort

LINK_CREDIT: Final = 170  # rabbit_amqp_session's ?LINK_CREDIT_RCV
_UINT: Final = 2**32


class IncomingLink(QuietLink):
    def __init__(self, session: SessionPort, attach: Attach, address: addresses.Address | None) -> None:
        self.session = session
        self.handle = attach.handle
        self.attach_frame = attach
        self.address = address  # None: the null target, each message's `to` says
        self.delivery_count = attach.initial_delivery_count or 0
        self.credit = LINK_CREDIT
        self._pending: list[bytes] = []  # the frames of a transfer with more=true
        self._pending_transfer: Transfer | None = None
        self._pending_size = 0

    @classmethod
    def attach(cls, session: SessionPort, attach: Attach) -> IncomingLink:
        target = attach.target
        raw = target.address if isinstance(target, Target) else None
        if raw is None:
            return cls(session, attach, None)
        address = addresses.parse(raw) or addresses.parse_v1(raw)
        if address is None:
            raise SessionError(INVALID_FIELD, f'Attach rejected: {{unknown_destination,"{raw}"}}')
        vhost = session.vhost
        if address.declare:
            declare_v1_queue(session, address)
        if address.queue is not None:
            if address.queue not in vhost.queues:
                raise SessionError(NOT_FOUND, f"no queue '{address.queue}' in vhost '{vhost.name}'")
        elif address.exchange not in vhost.exchanges:
            raise SessionError(NOT_FOUND, f"no exchange '{address.exchange}' in vhost '{vhost.name}'")
        _check_write(session, address.exchange)
        return cls(session, attach, address)

    def attached(self) -> None:
        attach = self.attach_frame
        session = self.session
        session.send(
            Attach(
                name=attach.name,
                handle=UInt(self.handle),
                role=True,
                snd_settle_mode=attach.snd_settle_mode,
                rcv_settle_mode=UByte(0),
                source=attach.source,
                target=attach.target,
                max_message_size=ULong(session.conn.max_message_size),
            )
        )
        session.send(self._credit_flow())

    def _credit_flow(self) -> Flow:
        return self.session.flow(
            handle=UInt(self.handle), delivery_count=UInt(self.delivery_count), link_credit=UInt(self.credit)
        )

    # -- transfers

    def on_transfer(self, transfer: Transfer, payload: bytes) -> None:
        if self._pending_transfer is None:
            self._pending_transfer = transfer
        self._pending.append(payload)
        self._pending_size += len(payload)
        max_size = self.session.conn.max_message_size
        if self._pending_size > max_size:
            # Refused as it grows, before the whole message is buffered (amqp:link:message-size-exceeded).
            size = self._pending_size
            self._pending, self._pending_size, self._pending_transfer = [], 0, None
            raise LinkError(MESSAGE_SIZE_EXCEEDED, f"message size ({size} bytes) > maximum ({max_size})")
        if transfer.more:
            return
        first = self._pending_transfer
        whole = b"".join(self._pending)
        self._pending_transfer = None
        self._pending = []
        self._pending_size = 0
        if transfer.aborted:
            return
        self.delivery_count = (self.delivery_count + 1) % _UINT
        self.credit -= 1
        persistence = self.session.vhost.persistence
        writes = persistence.writes if persistence is not None else 0
        settled = bool(first.settled or transfer.settled)
        outcome = self._publish(whole, settled)
        _count(self.session.conn.broker.amqp10_counters, outcome, settled)
        if not settled and first.delivery_id is not None:
            # A message the store took is accepted once its batch is durable, as a 0-9-1 confirm is.
            stored = persistence is not None and persistence.writes != writes
            self.session.settle_incoming(first.delivery_id, outcome, stored)
        if self.credit <= LINK_CREDIT // 2:
            self.credit = LINK_CREDIT
            self.session.send(self._credit_flow())

    def _publish(self, payload: bytes, settled: bool) -> DeliveryState:
        message10 = decode_message(payload)
        address = self.address
        if address is None:
            to = message10.properties.to if message10.properties is not None else None
            if to is None:
                return _rejected(PRECONDITION_FAILED, "anonymous terminus requires 'to' address to be set")
            address = addresses.parse(to)
            if address is None:
                return _rejected(PRECONDITION_FAILED, f"bad 'to' address: {to}")
            # Each message's exchange is checked as an attach's is: a refusal ends the session (4.0.5).
            _check_write(self.session, address.exchange)
        converted = to_amqp091(message10)
        # RabbitMQ 4.0.5 publishes to `/exchanges/:exchange` with the empty routing key; a v1 address without
        # one takes the subject.
        routing_key = address.routing_key
        if routing_key is None:
            subject = message10.properties.subject if message10.properties is not None else None
            routing_key = (subject or "") if address.v1 else ""
        message = Amqp10Message.published(address.exchange, routing_key, converted, message10)
        try:
            queues, rejected = self.session.vhost.publish(address.exchange, message)
        except AMQPError as error:
            return _rejected(condition_of(error), error.text)
        if not settled:
            # A queue process delivers what it takes to its consumers before it confirms it to the publisher:
            # a consumer with credit on this session gets the transfer before the publisher's disposition.
            for queue in queues:
                queue.dispatcher.catch_up(queue)
        if rejected:  # a queue refused it (x-overflow reject-publish): rejected, no error, as 4.0.5
            return Rejected()
        if not queues:
            return Released()
        return Accepted()

    # -- link lifecycle

    def on_flow(self, flow: Flow) -> None:
        if flow.echo:
            self.session.send(self._credit_flow())


def _count(counters: ProtocolCounters, outcome: DeliveryState, settled: bool) -> None:
    """rabbit_global_counters as RabbitMQ 4.0.5 counts a 1.0 publish: received, received_confirm when
    unsettled, routed, unroutable as returned (released) when unsettled and dropped when settled, confirmed
    when an unsettled one is accepted."""
    counters.received += 1
    if not settled:
        counters.received_confirm += 1
    if isinstance(outcome, Accepted):
        counters.routed += 1
        if not settled:
            counters.confirmed += 1
    elif isinstance(outcome, Released):
        if settled:
            counters.unroutable_dropped += 1
        else:
            counters.unroutable_returned += 1


def _check_write(session: SessionPort, exchange: str) -> None:
    if not session.access.allowed("exchange", exchange, "write"):
        raise SessionError(
            UNAUTHORIZED_ACCESS,
            f"write access to exchange '{exchange or 'amq.default'}' in vhost '{session.vhost.name}' "
            f"refused for user '{session.conn.username}'",
        )


def _rejected(condition: str, description: str) -> Rejected:
    return Rejected(error=Error(condition=Symbol(condition), description=description))
