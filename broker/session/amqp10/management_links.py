"""The link pair a client attaches to RabbitMQ 4's `/management` node (AMQP Link Pair CS 01, 2.1): its sender
(our ``ManagementRequests``) carries requests, its receiver (our ``ManagementReplies``) the replies, matched
by link name, in either order. As rabbit_amqp_session 4.0.5 does: both attaches must carry the link property
`paired` = true (else the session ends with amqp:invalid-field); the request link gets 8 credits, topped up
once half are spent; a request must be sent settled and ask for its reply at `$me`; each reply goes out
settled on the receiving half, and a request that finds no credit there ends the session with
amqp:precondition-failed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.session.amqp10 import management_node
from broker.session.amqp10.errors import INTERNAL_ERROR, INVALID_FIELD, PRECONDITION_FAILED, SessionError
from broker.session.amqp10.link_base import QuietLink
from protocol.amqp10.decode import decode_value
from protocol.amqp10.frames import FRAME_HEADER_SIZE, encode_frame
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import SND_SETTLED, Attach, Flow, Transfer, encode_performative
from protocol.amqp10.sections import AmqpValue, ApplicationProperties, Properties, section_of
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Symbol, UByte, UInt, ULong

if TYPE_CHECKING:
    from broker.session.amqp10.ports import SessionPort

ADDRESS: Final = "/management"
LINK_CREDIT: Final = 8  # rabbit_amqp_session's ?MANAGEMENT_LINK_CREDIT_RCV
_UINT: Final = 2**32
_INITIAL_DELIVERY_COUNT: Final = _UINT - 5
_PAIRED: Final = Symbol("paired")
_HTTP_RESPONSE: Final = {"http:response": "1.1"}  # HTTP over AMQP WD 06, 5.1


def is_management(attach: Attach) -> bool:
    """Is this attach one half of a management link pair? (A client's settled sender to the node's address,
    or a receiver from it.)"""
    if attach.role:
        return isinstance(attach.source, Source) and attach.source.address == ADDRESS
    return (
        isinstance(attach.target, Target)
        and attach.target.address == ADDRESS
        and attach.snd_settle_mode == SND_SETTLED
    )


def attach(session: SessionPort, attach: Attach) -> ManagementRequests | ManagementReplies:
    properties = attach.properties or {}
    if properties.get(_PAIRED) is not True:
        raise SessionError(INVALID_FIELD, "Link property 'paired' is not set to boolean value 'true'")
    for link in session.links.values():
        same_half = isinstance(link, ManagementReplies if attach.role else ManagementRequests)
        if same_half and link.name == attach.name:
            raise SessionError(
                PRECONDITION_FAILED, f"received invalid attach for management link pair '{attach.name}'"
            )
    if attach.role:
        return ManagementReplies(session, attach)
    return ManagementRequests(session, attach)


class _ManagementLink(QuietLink):
    def __init__(self, session: SessionPort, attach: Attach) -> None:
        self.session = session
        self.handle = attach.handle
        self.name = attach.name
        self.attach_frame = attach


class ManagementRequests(_ManagementLink):
    """The client's sender: each transfer is one request, answered on the paired receiver."""

    def __init__(self, session: SessionPort, attach: Attach) -> None:
        super().__init__(session, attach)
        self.delivery_count = attach.initial_delivery_count or 0
        self.credit = LINK_CREDIT
        self._pending: list[bytes] = []

    def attached(self) -> None:
        attach = self.attach_frame
        session = self.session
        session.send(
            Attach(
                name=attach.name,
                handle=UInt(self.handle),
                role=True,
                snd_settle_mode=UByte(SND_SETTLED),
                rcv_settle_mode=UByte(0),
                source=attach.source,
                target=attach.target,
                max_message_size=ULong(session.conn.max_message_size),
                properties=attach.properties,
            )
        )
        session.send(self._credit_flow())

    def _credit_flow(self) -> Flow:
        return self.session.flow(
            handle=UInt(self.handle), delivery_count=UInt(self.delivery_count), link_credit=UInt(self.credit)
        )

    def on_flow(self, flow: Flow) -> None:
        if flow.echo:
            self.session.send(self._credit_flow())

    def on_transfer(self, transfer: Transfer, payload: bytes) -> None:
        self._pending.append(payload)
        if transfer.more:
            return
        whole = b"".join(self._pending)
        self._pending = []
        if transfer.aborted:
            return
        if not transfer.settled:
            # 4.0.5 matches the request as settled; an unsettled one crashes its session ({badmatch,false}).
            raise SessionError(INTERNAL_ERROR, "a management request must be sent settled")
        self.delivery_count = (self.delivery_count + 1) % _UINT
        self.credit -= 1
        if self.credit <= LINK_CREDIT // 2:
            self.credit = LINK_CREDIT
            self.session.send(self._credit_flow())  # before the reply, as 4.0.5 sends it
        self._answer(whole)

    def _answer(self, payload: bytes) -> None:
        properties, body = _request_sections(payload)
        if (
            properties is None
            or properties.reply_to != "$me"
            or properties.to is None
            or properties.subject is None
        ):
            raise SessionError(INTERNAL_ERROR, "a management request needs to, subject and reply-to '$me'")
        replies = self._replies()
        if replies is None or replies.credit <= 0:
            credit = replies.credit if replies is not None else 0
            raise SessionError(
                PRECONDITION_FAILED,
                f"insufficient credit ({credit}) for management link from RabbitMQ to client",
            )
        status, reply = management_node.handle(self.session, properties.subject, properties.to, body)
        replies.send_reply(
            encode_sections(
                [
                    Properties(subject=status, correlation_id=properties.message_id),
                    ApplicationProperties(_HTTP_RESPONSE),
                    AmqpValue(reply),
                ]
            )
        )

    def _replies(self) -> ManagementReplies | None:
        for link in self.session.links.values():
            if isinstance(link, ManagementReplies) and link.name == self.name:
                return link
        return None


def _request_sections(payload: bytes) -> tuple[Properties | None, object]:
    """A request's properties and amqp-value body, the other sections ignored and the order not checked,
    as rabbit_amqp_management's decode_req takes them (python-qpid-proton 0.40 sends a null body ahead of
    the properties)."""
    properties: Properties | None = None
    body: object = None
    view = memoryview(payload)
    position = 0
    while position < len(view):
        value, position = decode_value(view, position)
        section = section_of(value)
        if isinstance(section, Properties):
            properties = section
        elif isinstance(section, AmqpValue):
            body = section.value
    return properties, body


class ManagementReplies(_ManagementLink):
    """The client's receiver: the replies, settled, as the client's credit allows."""

    def __init__(self, session: SessionPort, attach: Attach) -> None:
        super().__init__(session, attach)
        self.delivery_count = _INITIAL_DELIVERY_COUNT
        self.credit = 0

    def attached(self) -> None:
        attach = self.attach_frame
        self.session.send(
            Attach(
                name=attach.name,
                handle=UInt(self.handle),
                role=False,
                snd_settle_mode=UByte(SND_SETTLED),
                rcv_settle_mode=attach.rcv_settle_mode,
                source=attach.source,
                target=attach.target,
                initial_delivery_count=UInt(self.delivery_count),
                max_message_size=attach.max_message_size,  # echoed: the replies respect it
                properties=attach.properties,
            )
        )

    def on_flow(self, flow: Flow) -> None:
        if flow.link_credit is not None:
            receiver_count = _INITIAL_DELIVERY_COUNT if flow.delivery_count is None else flow.delivery_count
            credit = (receiver_count + flow.link_credit - self.delivery_count) % _UINT
            self.credit = 0 if credit > _UINT // 2 else credit
        if flow.echo:
            self.session.send(
                self.session.flow(
                    handle=UInt(self.handle),
                    delivery_count=UInt(self.delivery_count),
                    link_credit=UInt(self.credit),
                )
            )

    def send_reply(self, payload: bytes) -> None:
        session = self.session
        delivery_id = session.next_delivery_id
        session.next_delivery_id = (delivery_id + 1) % _UINT
        transfer = Transfer(
            handle=UInt(self.handle),
            delivery_id=UInt(delivery_id),
            delivery_tag=b"",
            message_format=UInt(0),
            settled=True,
        )
        frames = self._frames(transfer, payload)
        session.next_outgoing_id = (session.next_outgoing_id + len(frames)) % _UINT
        session.remote_incoming_window -= len(frames)
        self.delivery_count = (self.delivery_count + 1) % _UINT
        self.credit -= 1
        session.conn.write(b"".join(frames))

    def _frames(self, transfer: Transfer, payload: bytes) -> list[bytes]:
        """One frame while the reply fits the client's max-frame-size, else several with more=true."""
        channel = self.session.channel
        whole = encode_performative(transfer, payload)
        limit = self.session.conn.peer_max_frame_size - FRAME_HEADER_SIZE
        if len(whole) <= limit:
            return [encode_frame(whole, channel)]
        step = max(1, limit - len(encode_performative(transfer)) - 8)
        frames = []
        for start in range(0, len(payload), step):
            more = start + step < len(payload)
            part = (
                Transfer(
                    handle=transfer.handle,
                    delivery_id=transfer.delivery_id,
                    delivery_tag=transfer.delivery_tag,
                    message_format=transfer.message_format,
                    settled=True,
                    more=more,
                )
                if start == 0
                else Transfer(handle=transfer.handle, more=more)
            )
            frames.append(encode_frame(encode_performative(part, payload[start : start + step]), channel))
        return frames
