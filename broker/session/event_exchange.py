"""The event exchange (rabbitmq_event_exchange): every vhost's topology events published to the topic
exchange ``amq.rabbitmq.event`` of one vhost (``event_exchange.vhost``, default "/"), as RabbitMQ 3.10 does.

rabbit_event_exchange:handle_event sends each event with routing key ``<object>.<verb>`` (queue.created), an
empty body, delivery_mode 2, ``timestamp`` in seconds and every field of the event as a header, led by
``timestamp_in_ms``. Arguments tables are formatted by its fallback clause (io_lib "~p" of each
``{Key, Type, Value}``), so they arrive as an array of strings such as ``{<<"x-max-length">>,signedint,5}``.

It attaches to the event bus as a topology observer (``hot=False``) and a notice listener (users, vhosts,
permissions, policies, parameters, limits, connections, channels, logins): the per-message emit sites test
only ``EventBus.stepping``, which it leaves alone, so it adds nothing to the publish/deliver path; switched
off it is not attached at all. Each event carries its acting user from where it was emitted
(broker.core.model.acting).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pamqp import commands

from broker.core.exchanges.exchange import create_exchange
from broker.core.model.event_types import MessageEvent, Notice, Topology, TopologyEvent
from broker.core.model.message import Message
from protocol.codec import encode_header_payload
from protocol.header_rewrite import rewrite_content_header

if TYPE_CHECKING:
    from broker.core.broker import Broker
    from broker.core.model.clock import Clock

EVENT_EXCHANGE = "amq.rabbitmq.event"
# RabbitMQ's ?INTERNAL_USER, for what the broker does on its own (auto-delete, expiry).
INTERNAL_USER = "rmq-internal"
_INT32 = range(-(2**31), 2**31)


class EventExchange:
    """Publishes topology events into ``amq.rabbitmq.event`` of ``vhost``; ``attach`` declares it."""

    def __init__(
        self, broker: Broker, clock: Clock, vhost: str = "/", node: str = "rabbit@localhost"
    ) -> None:
        self.broker = broker
        self.clock = clock
        self.vhost = vhost
        self.node = node

    def attach(self) -> Callable[[], None]:
        """Declare the exchange (durable, internal, topic, as the plugin does) and start publishing."""
        vhost = self.broker.vhosts.get(self.vhost)
        if vhost is not None and EVENT_EXCHANGE not in vhost.exchanges:
            vhost.exchanges[EVENT_EXCHANGE] = create_exchange(
                EVENT_EXCHANGE, "topic", durable=True, internal=True, vhost=self.vhost
            )
        detach = self.broker.events.attach(self, hot=False)
        stop = self.broker.events.listen(self.on_notice)

        def off() -> None:
            detach()
            stop()

        return off

    def on_message(self, event: MessageEvent) -> None:
        """Message fates are not events of this plugin."""

    def on_topology(self, event: TopologyEvent) -> None:
        fields = _FIELDS.get(event.kind)
        if fields is None:
            return
        key, build = fields
        headers: dict[str, Any] = {"timestamp_in_ms": self.clock.now_ms()}
        headers |= build(event.detail, event.vhost)
        headers["user_who_performed_action"] = event.actor or INTERNAL_USER
        self.publish(key, headers)

    def on_notice(self, notice: Notice) -> None:
        headers: dict[str, Any] = {"timestamp_in_ms": self.clock.now_ms()}
        headers |= notice.fields
        if "client_properties" in headers:
            headers["client_properties"] = format_arguments(headers["client_properties"])
        if notice.name in _ON_NODE:
            headers["node"] = self.node
        if notice.name in _VHOST_STATE:
            headers |= vhost_state(headers, self.node)
        if "value" in headers and headers["value"] == {}:
            headers["value"] = []  # an empty Erlang proplist: AMQP sends it as an empty array
        if notice.actor is not None:
            headers["user_who_performed_action"] = notice.actor or INTERNAL_USER
        self.publish(notice.name, headers)

    def publish(self, routing_key: str, headers: dict[str, Any]) -> None:
        vhost = self.broker.vhosts.get(self.vhost)
        exchange = None if vhost is None else vhost.exchanges.get(EVENT_EXCHANGE)
        if vhost is None or exchange is None:
            return
        properties = commands.Basic.Properties(
            delivery_mode=2, timestamp=_seconds(headers["timestamp_in_ms"])
        )
        # The plugin writes every integer as a long (l): header_rewrite gives values RabbitMQ's own types.
        header_payload = rewrite_content_header(
            encode_header_payload(0, properties), headers, (), clear_expiration=False
        )
        message = Message(EVENT_EXCHANGE, routing_key, header_payload, b"", headers, 2)
        # Internal: clients cannot publish to it, the broker routes into it directly.
        for queue in vhost.router.route(exchange, message):
            queue.enqueue(message)  # type: ignore[attr-defined]


def _seconds(ms: int) -> datetime:
    # AMQP's timestamp is POSIX seconds: the plugin converts its milliseconds (rounding down).
    return datetime.fromtimestamp(ms // 1000, UTC)


def _queue_created(d: dict[str, Any], vhost: str) -> dict[str, Any]:
    return {
        "name": d["queue"],
        "vhost": vhost,
        "durable": d["durable"],
        "auto_delete": d["auto_delete"],
        "arguments": format_arguments(d.get("arguments") or {}),
        # A pid for an exclusive queue's owner; RabbitMQ 3.10 sends "" otherwise.
        "owner_pid": "<warrenmq.0.0.0>" if d["exclusive"] else "",
        "exclusive": d["exclusive"],
    }


def _exchange_created(d: dict[str, Any], vhost: str) -> dict[str, Any]:
    return {
        "name": d["exchange"],
        "vhost": vhost,
        "type": d["type"],
        "durable": d["durable"],
        "auto_delete": d.get("auto_delete", False),
        "internal": d.get("internal", False),
        "arguments": format_arguments(d.get("arguments") or {}),
        "policy": "",
    }


def _binding(d: dict[str, Any], vhost: str) -> dict[str, Any]:
    return {
        "source_name": d["source"],
        "source_kind": "exchange",
        "destination_name": d["destination"],
        "destination_kind": d["destination_type"],
        "routing_key": d["routing_key"],
        "arguments": format_arguments(d.get("arguments") or {}),
        "vhost": vhost,
    }


def _consumer_created(d: dict[str, Any], vhost: str) -> dict[str, Any]:
    return {
        "consumer_tag": d["consumer_tag"],
        "exclusive": d["exclusive"],
        "ack_required": d["ack_required"],
        "channel": _channel_pid(d),
        "queue": d["queue"],
        "vhost": vhost,
        "prefetch_count": d["prefetch_count"],
        "arguments": format_arguments(d["arguments"]),
    }


def _consumer_deleted(d: dict[str, Any], vhost: str) -> dict[str, Any]:
    return {
        "consumer_tag": d["consumer_tag"],
        "channel": _channel_pid(d),
        "queue": d["queue"],
        "vhost": vhost,
    }


def _channel_pid(d: dict[str, Any]) -> str:
    # RabbitMQ sends the channel process's pid: the one channel.created named, when channel notices are on.
    return str(d.get("channel_pid") or f"<warrenmq.{d['channel']}.0>")


# Notices whose fields name the node, as rabbit_reader's and rabbit_vhost's do.
_ON_NODE = frozenset({"connection.created", "connection.closed", "vhost.down"})
_VHOST_STATE = frozenset({"vhost.created", "vhost.updated"})


def vhost_state(fields: dict[str, Any], node: str) -> dict[str, Any]:
    """vhost.created/updated as rabbit_vhost:info reports it: the metadata map as Erlang prints it, the
    default queue type ('undefined' unless set) and the vhost's state on each node."""
    metadata = {
        "description": _binary(fields["description"]),
        "tags": f"[{','.join(map(_atom, fields['tags']))}]",
    }
    queue_type = fields.get("default_queue_type")
    if queue_type:
        metadata["default_queue_type"] = _binary(queue_type)
    printed = ",".join(f"{key} => {value}" for key, value in sorted(metadata.items()))
    return {
        "metadata": f"#{{{printed}}}",
        "default_queue_type": queue_type or "undefined",
        "cluster_state": {node: "running"},
    }


def _atom(name: str) -> str:
    # Erlang prints an atom bare when it is a lowercase word, quoted otherwise.
    if name and name[0].islower() and all(c.isalnum() or c in "_@" for c in name):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _named(field: str) -> Callable[[dict[str, Any], str], dict[str, Any]]:
    def build(d: dict[str, Any], vhost: str) -> dict[str, Any]:
        return {"name": d[field], "vhost": vhost}

    return build


_FIELDS: dict[Topology, tuple[str, Callable[[dict[str, Any], str], dict[str, Any]]]] = {
    Topology.QUEUE_DECLARED: ("queue.created", _queue_created),
    Topology.QUEUE_DELETED: ("queue.deleted", _named("queue")),
    Topology.EXCHANGE_DECLARED: ("exchange.created", _exchange_created),
    Topology.EXCHANGE_DELETED: ("exchange.deleted", _named("exchange")),
    Topology.BOUND: ("binding.created", _binding),
    Topology.UNBOUND: ("binding.deleted", _binding),
    Topology.CONSUMER_ADDED: ("consumer.created", _consumer_created),
    Topology.CONSUMER_REMOVED: ("consumer.deleted", _consumer_deleted),
}


def format_arguments(arguments: dict[str, Any]) -> list[str]:
    """Each argument as Erlang prints its ``{Key, Type, Value}`` table entry."""
    return [f"{{{_binary(key)},{_typed(value)}}}" for key, value in arguments.items()]


def _typed(value: Any) -> str:
    if isinstance(value, bool):
        return f"bool,{'true' if value else 'false'}"
    if isinstance(value, int):
        return f"{'signedint' if value in _INT32 else 'long'},{value}"
    if isinstance(value, float):
        return f"double,{value!r}"
    if isinstance(value, str | bytes):
        return f"longstr,{_binary(value)}"
    if isinstance(value, dict):
        return f"table,[{','.join(format_arguments(value))}]"
    if isinstance(value, list):
        return "array,[" + ",".join("{" + _typed(item) + "}" for item in value) + "]"
    return "void,undefined"


def _binary(value: str | bytes) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if not text:
        return "<<>>"  # Erlang prints the empty binary without quotes
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'<<"{escaped}">>'
