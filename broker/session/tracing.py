"""The firehose (rabbit_trace): with tracing on for a vhost, a copy of every publish and every delivery goes
to that vhost's ``amq.rabbitmq.trace`` exchange, routing key ``publish.<exchange>`` / ``deliver.<queue>``,
the original body, and only ``headers`` set: exchange_name, routing_keys, properties, node, then vhost,
connection, channel, user and routed_queues (publish) or redelivered (deliver), as RabbitMQ 3.10 sends them.

Reached from the hot path only behind ``EventBus.stepping``, which the tracer sets while attached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pamqp import commands

from broker.core.model.message import Message
from protocol.codec import encode_header_payload, set_properties

if TYPE_CHECKING:
    from broker.core.queues.queue import Envelope, Queue
    from broker.core.topology.vhost import VirtualHost
    from broker.session.ports import ChannelPort

TRACE_EXCHANGE = "amq.rabbitmq.trace"


class Tracer:
    """Which vhosts trace, and the publishing of trace messages; ``node`` goes in every trace's headers."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.vhosts: set[str] = set()

    def published(
        self, channel: ChannelPort, vhost: VirtualHost, message: Message, queues: list[Queue]
    ) -> None:
        if vhost.name not in self.vhosts or message.exchange == TRACE_EXCHANGE:
            return
        extra = self._origin(channel, vhost.name)
        if message.exchange:
            extra["routed_queues"] = [queue.name for queue in queues]
        else:
            # rabbit_exchange_type_direct routes the default exchange by name, before the queues are looked
            # up: RabbitMQ 3.10 lists every key (CC ones too) sorted, whether or not such a queue exists.
            extra["routed_queues"] = sorted(set(_routing_keys(message)))
        self._trace(vhost, message, f"publish.{message.exchange}", extra)

    def delivered(self, channel: ChannelPort, queue: Queue, envelope: Envelope) -> None:
        vhost = channel.conn.vhost
        message = envelope.message
        if vhost is None or vhost.name not in self.vhosts or message.exchange == TRACE_EXCHANGE:
            return
        extra: dict[str, Any] = {"redelivered": 1 if envelope.redelivered else 0}
        extra |= self._origin(channel, vhost.name)
        self._trace(vhost, message, f"deliver.{queue.name}", extra)

    def _origin(self, channel: ChannelPort, vhost: str) -> dict[str, Any]:
        conn = channel.conn
        return {
            "vhost": vhost,
            # RabbitMQ's connection name ("client -> server"), which the transport knows.
            "connection": str(getattr(getattr(conn, "transport", None), "name", conn.peer)),
            "channel": channel.channel_id,
            "user": conn.username,
        }

    def _trace(self, vhost: VirtualHost, message: Message, routing_key: str, extra: dict[str, Any]) -> None:
        exchange = vhost.exchanges.get(TRACE_EXCHANGE)
        if exchange is None:
            return
        headers: dict[str, Any] = {
            "exchange_name": message.exchange,
            "routing_keys": _routing_keys(message),
            "properties": set_properties(message.header_payload),
            "node": self.node,
        }
        headers |= extra
        properties = commands.Basic.Properties(headers=headers)
        header_payload = encode_header_payload(len(message.body), properties)
        trace = Message(
            TRACE_EXCHANGE, routing_key, header_payload, message.body, headers, 1, None, None, None
        )
        # amq.rabbitmq.trace is internal: clients cannot publish to it, the broker routes into it directly.
        for queue in vhost.router.route(exchange, trace):
            queue.enqueue(trace)  # type: ignore[attr-defined]


def _routing_keys(message: Message) -> list[str]:
    """The routing key and the CC keys (BCC is never shown), as rabbit_basic keeps them."""
    keys = [message.routing_key]
    cc = (message.headers or {}).get("CC")
    if isinstance(cc, list):
        keys.extend(key.decode() if isinstance(key, bytes) else str(key) for key in cc)
    return keys
