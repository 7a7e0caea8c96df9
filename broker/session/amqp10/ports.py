"""What a link sees of its session and a session of its connection (typing only: the session and the
connection meet these structurally), so that each module imports only those below it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from broker.core.access.access import DecisionCache
    from broker.core.broker import Broker
    from broker.core.queues.queue import Consumer, Queue
    from broker.core.queues.unacked import UnackedTracker
    from broker.core.topology.vhost import VirtualHost
    from broker.session.config import SessionConfig
    from protocol.amqp10.delivery_states import DeliveryState
    from protocol.amqp10.performatives import Flow, Performative


class ConnectionPort(Protocol):
    broker: Broker
    config: SessionConfig
    username: str
    exclusive_queues: list[Queue]  # declared exclusive through the management node: deleted with it
    writable: bool
    peer_max_frame_size: int
    max_message_size: int  # max_message_size (rabbitmq.conf), the profile's default unless configured

    def send(self, channel: int, performative: Performative, payload: bytes = b"") -> None: ...

    def write(self, data: bytes) -> None: ...


class SessionPort(Protocol):
    conn: ConnectionPort
    channel: int
    vhost: VirtualHost
    access: DecisionCache
    unacked: UnackedTracker
    links: dict[int, Any]
    next_delivery_id: int
    next_outgoing_id: int
    remote_incoming_window: int

    def send(self, performative: Performative, payload: bytes = b"") -> None: ...

    def flow(self, **link_fields: object) -> Flow: ...

    def requeue_unsettled(self, consumer: Consumer) -> None: ...

    def settle_incoming(self, delivery_id: int, state: DeliveryState, stored: bool) -> None: ...
