"""The bodies of RabbitMQ 4's HTTP-over-AMQP management requests and replies (rabbit_amqp_management): the
queue, exchange and binding maps a client sends, the queue and binding maps the node answers, the binding
path segments (``src=:s;dstq=:q;key=:k;args=:hash``) and the error a request ends in (an HTTP status code and
RabbitMQ's text). Arguments cross as rabbit_amqp_management converts them: an AMQP 1.0 map in, a 0-9-1 table
in the core, back as a map."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, unquote

from broker.core.exchanges.erlang_hash import Atom, phash2
from broker.core.model.arguments import Long, amqp_type_name
from broker.core.streams.lookup import stream_of
from protocol.amqp10.types import Array, Int, Symbol, UInt, ULong

if TYPE_CHECKING:
    from broker.core.exchanges.bindings import Binding
    from broker.core.queues.queue import Queue

QUEUE_TYPES: Final = ("classic", "quorum", "stream")
# rabbit_amqp_management's binding path segment: source, destination and key percent-encoded, the arguments'
# hash in base64url without padding (RFC 4648, 5).
_SEGMENT: Final = re.compile(
    r"^src=([0-9A-Za-z\-._~%]+);dst([eq])=([0-9A-Za-z\-._~%]+);key=([0-9A-Za-z\-._~%]*);args=([0-9A-Za-z\-_]*)$"
)


_BINDING_NAMES: Final = ("source", "destination_queue", "destination_exchange", "binding_key")


class ManagementError(Exception):
    """A request answered with an error status (rabbit_amqp_management's throw/3): the code and the text."""

    def __init__(self, status: str, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A PUT /queues/:queue body, with 4.0.5's defaults: durable, not exclusive, not auto-delete."""

    durable: bool = True
    exclusive: bool = False
    auto_delete: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExchangeSpec:
    """A PUT /exchanges/:exchange body, with 4.0.5's defaults: a durable direct exchange."""

    type: str = "direct"
    durable: bool = True
    auto_delete: bool = False
    internal: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BindingSpec:
    """A POST /bindings body; ``to_queue`` tells whether the destination is a queue or an exchange."""

    source: str
    destination: str
    to_queue: bool
    binding_key: str
    arguments: dict[str, Any]


def decode_queue(body: object) -> QueueSpec:
    fields: dict[str, Any] = {}
    for key, value in _pairs(body, "queue property"):
        if key in ("durable", "exclusive", "auto_delete") and isinstance(value, bool):
            fields[key] = value
        elif key == "arguments":
            fields[key] = to_table(value)
        else:
            raise ManagementError("400", f"bad queue property {erlang_pair(key, value)}")
    return QueueSpec(**fields)


def decode_exchange(body: object) -> ExchangeSpec:
    fields: dict[str, Any] = {}
    for key, value in _pairs(body, "exchange property"):
        if key in ("durable", "auto_delete", "internal") and isinstance(value, bool):
            fields[key] = value
        elif key == "type" and _is_string(value):
            fields[key] = str(value)
        elif key == "arguments":
            fields[key] = to_table(value)
        else:
            raise ManagementError("400", f"bad exchange property {erlang_pair(key, value)}")
    return ExchangeSpec(**fields)


def decode_binding(body: object) -> BindingSpec:
    """A binding body; 4.0.5 requires source, binding_key, arguments and one destination (a body without
    them crashes its session, answered here as the same internal error)."""
    fields: dict[str, Any] = {}
    for key, value in _pairs(body, "binding field"):
        if key in _BINDING_NAMES and _is_string(value):
            fields[key] = str(value)
        elif key == "arguments":
            fields[key] = to_table(value)
        else:
            raise ManagementError("400", f"bad binding field {erlang_pair(key, value)}")
    to_queue = "destination_queue" in fields
    destination = fields.get("destination_queue", fields.get("destination_exchange"))
    if destination is None or not {"source", "binding_key", "arguments"} <= fields.keys():
        raise KeyError("binding body without source, destination, binding_key or arguments")
    return BindingSpec(fields["source"], destination, to_queue, fields["binding_key"], fields["arguments"])


def _pairs(body: object, what: str) -> list[tuple[str, Any]]:
    if not isinstance(body, dict):
        raise KeyError(f"{what}: a map expected")
    return [(str(key), value) for key, value in body.items()]


def _is_string(value: object) -> bool:
    return isinstance(value, str) and not isinstance(value, Symbol)


# -- arguments


def to_table(value: object) -> dict[str, Any]:
    """An AMQP 1.0 map of arguments as the core's 0-9-1 table (mc_amqpl:to_091): string and symbol keys,
    strings and symbols as text, numbers as numbers."""
    if not isinstance(value, dict):
        raise ManagementError("400", f"unsupported argument {value!r}")
    table: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ManagementError("400", f"unsupported argument {key!r}")
        table[str(key)] = _plain(item)
    return table


def _plain(value: object) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if type(value) is int:  # an AMQP 1.0 long stays a 0-9-1 long (mc_amqpl:to_091)
        return Long(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Array):
        return [_plain(v) for v in value.items]
    return value


def _field_type(value: object) -> Atom:
    """The 0-9-1 field type of a table value, as rabbit_binding keeps it for the arguments' hash."""
    return Atom(amqp_type_name(value))


def _erlang_value(value: object) -> object:
    if isinstance(value, dict):
        return [(key, _field_type(item), _erlang_value(item)) for key, item in sorted(value.items())]
    if isinstance(value, list):
        return [(_field_type(item), _erlang_value(item)) for item in value]
    return value


def args_hash(arguments: dict[str, Any]) -> str:
    """rabbit_amqp_management's args_hash: empty for no arguments, else erlang:phash2 of the sorted 0-9-1
    table in 32 bits, as unpadded base64url."""
    if not arguments:
        return ""
    digest = phash2(_erlang_value(arguments), 1 << 32)
    return base64.urlsafe_b64encode(digest.to_bytes(4, "big")).decode().rstrip("=")


# -- replies


def encode_queue(queue: Queue, node: str) -> dict[str, Any]:
    """The queue map of a 4.0.5 reply (encode_queue): on one node, leader and replicas are that node; a
    stream's message_count is 0, as rabbit_amqqueue:stat answers for one (observed on 4.0.5)."""
    message_count = 0 if stream_of(queue) is not None else queue.message_count
    kind = queue.arguments.get("x-queue-type")
    return {
        "leader": node,
        "replicas": Array("string", (node,)),
        "message_count": ULong(message_count),
        "consumer_count": UInt(queue.consumer_count),
        "name": queue.name,
        "vhost": queue.vhost,
        "durable": queue.durable,
        "auto_delete": queue.auto_delete,
        "exclusive": queue.exclusive_owner is not None,
        "type": kind if kind in QUEUE_TYPES else "classic",
        "arguments": from_table(queue.arguments),
    }


def from_table(table: dict[str, Any]) -> dict[str, Any]:
    """A 0-9-1 table as an AMQP 1.0 map (mc_amqpl:from_091): a signedint as an int, a long as a long."""
    return {
        key: Int(value) if amqp_type_name(value) == "signedint" else value for key, value in table.items()
    }


def message_count(count: int) -> dict[str, Any]:
    """The reply to a purge or a queue delete."""
    return {"message_count": ULong(count)}


def encode_bindings(bindings: list[Binding]) -> list[dict[str, Any]]:
    replies = []
    for binding in bindings:
        destination = binding.destination
        to_queue = not binding.is_e2e
        name = str(getattr(destination, "name", ""))
        args = binding.args
        replies.append(
            {
                "source": binding.source.name,
                "destination_queue" if to_queue else "destination_exchange": name,
                "binding_key": binding.routing_key,
                "arguments": from_table(args),
                "location": binding_location(binding.source.name, to_queue, name, binding.routing_key, args),
            }
        )
    return replies


def binding_location(source: str, to_queue: bool, destination: str, key: str, args: dict[str, Any]) -> str:
    return (
        f"/bindings/src={quote(source, safe='')};dst{'q' if to_queue else 'e'}={quote(destination, safe='')};"
        f"key={quote(key, safe='')};args={args_hash(args)}"
    )


def parse_binding_segment(segment: str) -> tuple[str, bool, str, str, str]:
    """(source, to_queue, destination, key, args hash) of a binding path segment, else a 400."""
    match = _SEGMENT.match(segment)
    if match is None:
        raise ManagementError("400", f"bad binding path segment '{segment}'")
    source, kind, destination, key, hashed = match.groups()
    return unquote(source), kind == "q", unquote(destination), unquote(key), hashed


def erlang_pair(key: str, value: object) -> str:
    """A body's {Key, Value} as 4.0.5 prints the term in its 400 texts (io_lib ~tp of the AMQP types)."""
    return "{" + f'{{utf8,<<"{key}">>}},{_erlang_amqp(value)}' + "}"


def _erlang_amqp(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Symbol):
        return f'{{symbol,<<"{value}">>}}'
    if isinstance(value, str):
        return f'{{utf8,<<"{value}">>}}'
    if isinstance(value, int):
        name = type(value).__name__.lower()
        return f"{{{'long' if name == 'int' else name},{int(value)}}}"
    return repr(value)
