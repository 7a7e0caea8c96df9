"""One AMQP 1.0 session (part 2, 2.5): its windows, its links by handle, and the deliveries it sent that
await the client's disposition. Numbers as RabbitMQ 4.0.5's rabbit_amqp_session answers a begin: transfer-ids
from 2^32 - 4 (so that wrap-around is exercised early), an incoming window of 400 topped up at half, an
unlimited outgoing window and handles up to 255."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.access.access import DecisionCache
from broker.core.model.protocol_counters import queue_type_of
from broker.core.queues.unacked import Delivery, UnackedTracker, requeue_deliveries
from broker.core.streams.lookup import stream_outcomes
from broker.core.topology.dead_letter import reject_deliveries
from broker.session.amqp10 import management_links
from broker.session.amqp10.coordinator import refuse_coordinator
from broker.session.amqp10.errors import (
    ILLEGAL_STATE,
    UNATTACHED_HANDLE,
    LinkError,
    SessionError,
)
from broker.session.amqp10.incoming import IncomingLink
from broker.session.amqp10.management_links import ManagementReplies, ManagementRequests
from broker.session.amqp10.modified import apply_modified, check_annotations
from broker.session.amqp10.outgoing import OutgoingLink
from broker.session.fates import forget_settled
from protocol.amqp10.delivery_states import Accepted, DeliveryState, Modified, Rejected, Released
from protocol.amqp10.performatives import (
    Attach,
    Begin,
    Detach,
    Disposition,
    Flow,
    Performative,
    Transfer,
)
from protocol.amqp10.types import UInt, UShort
from protocol.errors import ChannelError

if TYPE_CHECKING:
    from broker.core.queues.queue import Consumer
    from broker.core.topology.vhost import VirtualHost
    from broker.session.amqp10.ports import ConnectionPort

Link = IncomingLink | OutgoingLink | ManagementRequests | ManagementReplies
UINT: Final = 2**32
INITIAL_OUTGOING_ID: Final = UINT - 4
INCOMING_WINDOW: Final = 400
HANDLE_MAX: Final = 255


class Session:
    def __init__(self, conn: ConnectionPort, channel: int, vhost: VirtualHost, begin: Begin) -> None:
        self.conn = conn
        self.channel = channel
        self.vhost = vhost
        self.access = DecisionCache(conn.broker.access, conn.username, vhost.name)
        self.next_incoming_id = begin.next_outgoing_id
        self.incoming_window = INCOMING_WINDOW
        self.next_outgoing_id = INITIAL_OUTGOING_ID
        self.remote_incoming_window = begin.incoming_window
        self.next_delivery_id = 0
        self.links: dict[int, Link] = {}
        self.unacked = UnackedTracker()  # deliveries sent unsettled, by delivery-id
        # Outcomes of the client's unsettled transfers, sent once the read is handled, runs of consecutive
        # delivery-ids with one outcome in one disposition (as rabbit_amqp_session batches them).
        self._outcomes: list[tuple[int, DeliveryState]] = []
        self._held: list[tuple[int, int, DeliveryState]] = []  # (store batch, delivery-id, outcome)
        self._released = False
        self.alarmed = False

    def begin_reply(self) -> Begin:
        return Begin(
            remote_channel=UShort(self.channel),
            next_outgoing_id=UInt(self.next_outgoing_id),
            incoming_window=UInt(self.incoming_window),
            outgoing_window=UInt(UINT - 1),
            handle_max=UInt(HANDLE_MAX),
        )

    # -- input

    def on_performative(self, performative: Performative, payload: bytes) -> None:
        if isinstance(performative, Transfer):
            self._on_transfer(performative, payload)
        elif isinstance(performative, Disposition):
            self._on_disposition(performative)
        elif isinstance(performative, Flow):
            self._on_flow(performative)
        elif isinstance(performative, Attach):
            self._on_attach(performative)
        elif isinstance(performative, Detach):
            self._on_detach(performative)
        else:
            raise SessionError(ILLEGAL_STATE, f"unexpected {type(performative).__name__}")

    def _link(self, handle: int | None) -> Link:
        link = self.links.get(handle) if handle is not None else None
        if link is None:
            raise SessionError(UNATTACHED_HANDLE, f"Unknown link handle: {handle}")
        return link

    def _on_attach(self, attach: Attach) -> None:
        if attach.handle in self.links or attach.handle > HANDLE_MAX:
            raise SessionError("amqp:session:handle-in-use", f"handle {attach.handle} is in use")
        refuse_coordinator(attach)
        link: Link
        if management_links.is_management(attach):  # a half of a `/management` link pair
            link = management_links.attach(self, attach)
        elif attach.role:  # the client receives: we send from a queue
            link = OutgoingLink.attach(self, attach)
        else:
            link = IncomingLink.attach(self, attach)
        self.links[attach.handle] = link
        link.attached()

    def _on_detach(self, detach: Detach) -> None:
        link = self.links.pop(detach.handle, None)
        if link is not None:
            link.detached()
        self.send(Detach(handle=UInt(detach.handle), closed=detach.closed))

    def _on_transfer(self, transfer: Transfer, payload: bytes) -> None:
        self.transfer_received()
        link = self._link(transfer.handle)
        if not isinstance(link, IncomingLink | ManagementRequests):
            raise SessionError(ILLEGAL_STATE, f"transfer on the sending link {transfer.handle}")
        try:
            link.on_transfer(transfer, payload)
        except LinkError as error:
            # The link ends with the error (closed); the session carries on (part 2, 2.6.5).
            self.links.pop(link.handle, None)
            link.detached()
            link.detach_with(error.error())

    def _on_flow(self, flow: Flow) -> None:
        if flow.next_incoming_id is not None:
            self.remote_incoming_window = (
                flow.next_incoming_id + flow.incoming_window - self.next_outgoing_id
            ) % UINT
        else:
            self.remote_incoming_window = flow.incoming_window
        if flow.handle is not None:
            self._link(flow.handle).on_flow(flow)
        elif flow.echo:
            self.send(self.flow())
        self.wake()

    def _on_disposition(self, disposition: Disposition) -> None:
        if not disposition.role:  # from a sender: we never send to the client unsettled transfers it settles
            return
        check_annotations(disposition.state)
        first = disposition.first
        last = disposition.last if disposition.last is not None else first
        span = (last - first) % UINT
        # The ids in the range that are outstanding; ids already settled or never sent are ignored, as
        # RabbitMQ does. A wide range is matched against what is outstanding, not walked id by id.
        if span < len(self.unacked):
            tags = [(first + offset) % UINT for offset in range(span + 1)]
        else:
            tags = [
                delivery.delivery_tag
                for delivery in self.unacked.outstanding()
                if (delivery.delivery_tag - first) % UINT <= span
            ]
        deliveries = []
        for tag in tags:
            try:
                deliveries.append(self.unacked.settle_one(tag))
            except ChannelError:  # not outstanding
                continue
        if deliveries:
            self._settle(deliveries, disposition.state)

    def _settle(self, deliveries: list[Delivery], state: object) -> None:
        """The client's outcome, as RabbitMQ 4 maps it: accepted acks, released requeues, rejected
        dead-letters (or drops), modified requeues unless undeliverable-here (then as rejected), on a quorum
        queue with its failure counted and its annotations merged (``broker.session.amqp10.modified``). A
        stream keeps every message: RabbitMQ 4.0.5 settles a stream's delivery alike whatever the outcome
        (released, rejected or modified, it is neither read again nor dead-lettered), so each counts as
        accepted."""
        if state is not None and not isinstance(state, Accepted):
            deliveries, as_acks = stream_outcomes(deliveries, any_outcome=True)
            if as_acks:
                self._settle(as_acks, Accepted())
            if not deliveries:
                return
        if isinstance(state, Modified):
            apply_modified(deliveries, state, self.vhost.rewrite_header)
        if isinstance(state, Released) or (isinstance(state, Modified) and not state.undeliverable_here):
            requeue_deliveries(deliveries)
        else:
            if self.vhost.persistence is not None:
                forget_settled(deliveries)
            if isinstance(state, Rejected | Modified):
                reject_deliveries(deliveries)
            elif isinstance(state, Accepted) or state is None:
                counters = self.conn.broker.amqp10_counters
                for delivery in deliveries:
                    delivery.queue.stats.ack += 1
                    counters.acknowledged(queue_type_of(delivery.queue.arguments))
        for queue in {delivery.queue for delivery in deliveries}:
            queue.wake()

    # -- session flow

    def set_alarm(self, alarmed: bool) -> None:
        """A resource alarm closes the session's incoming window (a flow with incoming-window 0) until it
        clears (a flow with 400), as rabbit_amqp_session does; transfers sent anyway are still taken."""
        self.alarmed = alarmed
        self.incoming_window = 0 if alarmed else INCOMING_WINDOW
        self.send(self.flow())

    def transfer_received(self) -> None:
        """One transfer frame in: the incoming window shrinks, topped up at half (rabbit_amqp_session)."""
        self.next_incoming_id = (self.next_incoming_id + 1) % UINT
        if self.alarmed:
            return
        self.incoming_window -= 1
        if self.incoming_window <= INCOMING_WINDOW // 2:
            self.incoming_window = INCOMING_WINDOW
            self.send(self.flow())

    def flow(self, **link_fields: object) -> Flow:
        return Flow(
            next_incoming_id=UInt(self.next_incoming_id),
            incoming_window=UInt(self.incoming_window),
            next_outgoing_id=UInt(self.next_outgoing_id),
            outgoing_window=UInt(UINT - 1),
            **link_fields,  # type: ignore[arg-type]
        )

    # -- output

    def send(self, performative: Performative, payload: bytes = b"") -> None:
        self.conn.send(self.channel, performative, payload)

    def settle_incoming(self, delivery_id: int, state: DeliveryState, stored: bool) -> None:
        """The outcome of the client's unsettled transfer: sent once the read is handled, or, when the store
        took the message, once its batch has committed (``committed``), and after every earlier outcome."""
        persistence = self.vhost.persistence
        if (stored or self._held) and persistence is not None:
            batch = persistence.batch_id
            if not self._held or self._held[-1][0] != batch:
                persistence.on_commit(batch, self)
            self._held.append((batch, delivery_id, state))
            return
        self._outcomes.append((delivery_id, state))

    def committed(self) -> None:
        """A store batch committed (CommitWaiter): the outcomes held for it and those before it go out."""
        persistence = self.vhost.persistence
        if persistence is None or self._released:
            return
        done = persistence.committed_id
        while self._held and self._held[0][0] <= done:
            _, delivery_id, state = self._held.pop(0)
            self._outcomes.append((delivery_id, state))
        if self._outcomes:
            self._send_outcomes()

    def after_read(self) -> None:
        if self._outcomes:
            self._send_outcomes()
        for link in list(self.links.values()):
            link.after_read()

    def _send_outcomes(self) -> None:
        outcomes, self._outcomes = self._outcomes, []
        first, state = outcomes[0]
        last = first
        for delivery_id, next_state in outcomes[1:]:
            if delivery_id == (last + 1) % UINT and next_state == state:
                last = delivery_id
                continue
            self._disposition(first, last, state)
            first = last = delivery_id
            state = next_state
        self._disposition(first, last, state)

    def _disposition(self, first: int, last: int, state: DeliveryState) -> None:
        self.send(
            Disposition(
                role=True,
                first=UInt(first),
                last=UInt(last) if last != first else None,
                settled=True,
                state=state,
            )
        )

    def wake(self) -> None:
        for link in self.links.values():
            link.wake()

    def requeue_unsettled(self, consumer: Consumer) -> None:
        """Requeue what ``consumer``'s link sent and the client has not settled (its link is gone)."""
        tags = [d.delivery_tag for d in self.unacked.outstanding() if d.consumer is consumer]
        deliveries = [self.unacked.settle_one(tag) for tag in tags]
        if deliveries:
            requeue_deliveries(deliveries)
            for queue in {delivery.queue for delivery in deliveries}:
                queue.wake()

    def release(self) -> None:
        """The session ended (or the connection went): consumers go, unsettled deliveries are requeued."""
        if self._released:
            return
        self._released = True
        links = list(self.links.values())
        self.links.clear()
        for link in links:
            link.detached()
        deliveries = self.unacked.take_all()
        if deliveries:
            requeue_deliveries(deliveries)
            for queue in {delivery.queue for delivery in deliveries}:
                queue.wake()
