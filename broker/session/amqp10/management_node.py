"""RabbitMQ 4's `/management` node (rabbit_amqp_management, "HTTP over AMQP", v2 paths): one request's
method and path to the core's topology calls, and the status code and body it is answered with.

The checks and their order are 4.0.5's: names with a line feed are refused (400), `amq.` names and the
default exchange (403), then the user's permission (a refusal ends the session with
amqp:unauthorized-access, as 4.0.5 does), then the core, whose refusals become 409 (precondition failed) or
400 (anything else) with the core's text. A path 4.0.5 has no clause for crashes its session; here it ends
the session with amqp:internal-error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from broker.core.access.refusals import DEFAULT_EXCHANGE_NAME
from broker.core.exchanges.exchange import check_exchange_type, is_reserved_name
from broker.core.streams.lookup import stream_of
from broker.session.amqp10.errors import INTERNAL_ERROR, UNAUTHORIZED_ACCESS, SessionError
from broker.session.amqp10.management_bodies import (
    ManagementError,
    args_hash,
    decode_binding,
    decode_exchange,
    decode_queue,
    encode_bindings,
    encode_queue,
    message_count,
    parse_binding_segment,
)
from protocol.errors import AMQPError, ReplyCode

if TYPE_CHECKING:
    from broker.core.exchanges.bindings import Binding
    from broker.session.amqp10.ports import SessionPort

Reply = tuple[str, Any]  # the status code (the reply's subject) and the body (its amqp-value)


def handle(session: SessionPort, method: str, target: str, body: object) -> Reply:
    """The reply to one request; a ``ManagementError`` is answered with its status and text."""
    split = urlsplit(target)
    segments = split.path.split("/")[1:]
    query = dict(parse_qsl(split.query, keep_blank_values=True))
    try:
        return _route(session, method, segments, query, body)
    except ManagementError as error:
        return error.status, error.text
    except (KeyError, TypeError, ValueError) as error:
        # A body or a path 4.0.5 has no clause for crashes its session (function_clause, badmatch).
        raise SessionError(INTERNAL_ERROR, f"{type(error).__name__}: {error}") from None


def _route(
    session: SessionPort, method: str, segments: list[str], query: dict[str, str], body: object
) -> Reply:
    match method, segments:
        case "GET", ["queues", name] if body is None:
            return _get_queue(session, unquote(name))
        case "PUT", ["queues", name]:
            return _declare_queue(session, unquote(name), body)
        case "DELETE", ["queues", name, "messages"] if body is None:
            return _purge_queue(session, unquote(name))
        case "DELETE", ["queues", name] if body is None:
            return _delete_queue(session, unquote(name))
        case "PUT", ["exchanges", name]:
            return _declare_exchange(session, unquote(name), body)
        case "DELETE", ["exchanges", name] if body is None:
            return _delete_exchange(session, unquote(name))
        case "POST", ["bindings"]:
            return _bind(session, body)
        case "DELETE", ["bindings", segment] if body is None:
            return _unbind(session, segment)
        case "GET", ["bindings"] if body is None and "src" in query and "key" in query:
            return _list_bindings(session, query)
    raise KeyError(f"no management request {method} /{'/'.join(segments)}")


# -- queues


def _get_queue(session: SessionPort, name: str) -> Reply:
    queue = session.vhost.queues.get(name)
    if queue is None:
        raise ManagementError("404", f"queue '{name}' in vhost '{session.vhost.name}' not found")
    return "200", encode_queue(queue, session.conn.config.node_name)


def _declare_queue(session: SessionPort, name: str, body: object) -> Reply:
    spec = decode_queue(body)
    vhost = session.vhost
    if name == "":
        raise ManagementError("400", "declare queue with empty name not allowed")
    _no_line_breaks(name)
    _not_reserved("queue", name, vhost.name)
    _require(session, "queue", name, "configure")
    known = name in vhost.queues
    if not known:
        dead_letter_exchange = spec.arguments.get("x-dead-letter-exchange")
        if isinstance(dead_letter_exchange, str):
            _require(session, "queue", name, "read")
            _require(session, "exchange", dead_letter_exchange, "write")
    conn = session.conn
    with _answered():
        queue = vhost.declare_queue(
            name,
            conn if spec.exclusive else None,
            durable=spec.durable,
            exclusive=spec.exclusive,
            auto_delete=spec.auto_delete,
            arguments=spec.arguments,
        )
    if not known and queue.exclusive_owner is conn:
        conn.exclusive_queues.append(queue)
    return ("200" if known else "201"), encode_queue(queue, conn.config.node_name)


def _purge_queue(session: SessionPort, name: str) -> Reply:
    _require(session, "queue", name, "read")
    with _answered():
        if stream_of(session.vhost.queue(name, session.conn)) is not None:
            # rabbit_queue_type:purge answers {error, not_supported} for a stream.
            raise ManagementError(
                "400", f"purge not supported by queue '{name}' in vhost '{session.vhost.name}'"
            )
        count = session.vhost.purge_queue(name, session.conn)
    return "200", message_count(count)


def _delete_queue(session: SessionPort, name: str) -> Reply:
    _no_line_breaks(name)
    _require(session, "queue", name, "configure")
    with _answered():
        count = session.vhost.delete_queue(name, session.conn)  # 0 for a queue that is not there
    return "200", message_count(count)


# -- exchanges


def _declare_exchange(session: SessionPort, name: str, body: object) -> Reply:
    spec = decode_exchange(body)
    vhost = session.vhost
    try:
        check_exchange_type(spec.type, vhost.disabled_exchange_types)  # first, as rabbit_exchange:check_type
    except AMQPError as error:
        raise ManagementError("400", error.text) from None  # 400 whatever the code (4.0.5)
    _not_default(name)
    _require(session, "exchange", name, "configure")
    if name not in vhost.exchanges:
        _no_line_breaks(name)
        _not_reserved("exchange", name, vhost.name)
    with _answered():
        vhost.declare_exchange(
            name,
            spec.type,
            durable=spec.durable,
            auto_delete=spec.auto_delete,
            internal=spec.internal,
            arguments=spec.arguments,
        )
    return "204", None


def _delete_exchange(session: SessionPort, name: str) -> Reply:
    _no_line_breaks(name)
    _not_default(name)
    _not_reserved("exchange", name, session.vhost.name)
    _require(session, "exchange", name, "configure")
    with _answered():
        session.vhost.delete_exchange(name)  # nothing to do for an exchange that is not there
    return "204", None


# -- bindings


def _bind(session: SessionPort, body: object) -> Reply:
    spec = decode_binding(body)
    _binding_checks(session, spec.source, spec.to_queue, spec.destination, spec.binding_key)
    vhost = session.vhost
    with _answered():
        if spec.to_queue:
            vhost.bind_queue(spec.destination, spec.source, spec.binding_key, spec.arguments, session.conn)
        else:
            vhost.bind_exchange(spec.destination, spec.source, spec.binding_key, spec.arguments)
    return "204", None


def _unbind(session: SessionPort, segment: str) -> Reply:
    source, to_queue, destination, key, hashed = parse_binding_segment(segment)
    _binding_checks(session, source, to_queue, destination, key)
    vhost = session.vhost
    for binding in _between(session, source, to_queue, destination):
        if binding.routing_key == key and args_hash(binding.args) == hashed:
            with _answered():
                if to_queue:
                    vhost.unbind_queue(destination, source, key, binding.args, session.conn)
                else:
                    vhost.unbind_exchange(destination, source, key, binding.args)
            break
    return "204", None


def _list_bindings(session: SessionPort, query: dict[str, str]) -> Reply:
    if "dste" in query:
        to_queue, destination = False, query["dste"]
    elif "dstq" in query:
        to_queue, destination = True, query["dstq"]
    else:
        shown = ",".join(f'<<"{key}">> => <<"{value}">>' for key, value in query.items())
        raise ManagementError("400", f"missing 'dste' or 'dstq' in query: #{{{shown}}}")
    key = query["key"]
    found = [b for b in _between(session, query["src"], to_queue, destination) if b.routing_key == key]
    return "200", encode_bindings(found)


def _between(session: SessionPort, source: str, to_queue: bool, destination: str) -> list[Binding]:
    vhost = session.vhost
    exchange = vhost.exchanges.get(source)
    target = vhost.queues.get(destination) if to_queue else vhost.exchanges.get(destination)
    if exchange is None or target is None:
        return []
    return [b for b in vhost.bindings.by_source(exchange) if b.destination is target]


def _binding_checks(session: SessionPort, source: str, to_queue: bool, destination: str, key: str) -> None:
    """binding_checks: the default exchange at either end refused, names without line breaks, write on the
    destination, read on the source, then the key against a topic permission on an existing topic source."""
    for name, is_exchange in ((source, True), (destination, not to_queue)):
        if is_exchange:
            _not_default(name)
        _no_line_breaks(name)
    _require(session, "queue" if to_queue else "exchange", destination, "write")
    _require(session, "exchange", source, "read")
    exchange = session.vhost.exchanges.get(source)
    access = session.access
    topic = exchange is not None and exchange.type_name == "topic"
    if topic and not access.topic_allowed(source, key, "read"):
        raise SessionError(
            UNAUTHORIZED_ACCESS,
            f"read access to topic '{key}' in exchange '{source}' in vhost '{session.vhost.name}' refused "
            f"for user '{access.user}'",
        )


# -- the checks


def _require(session: SessionPort, kind: str, name: str, permission: str) -> None:
    """The user's permission, asked of the session's decision cache as every AMQP 1.0 link does; a refusal
    ends the session (4.0.5's check_resource_access), in 4.x's words."""
    if not session.access.allowed(kind, name, permission):  # type: ignore[arg-type]
        shown = DEFAULT_EXCHANGE_NAME if kind == "exchange" and name == "" else name
        raise SessionError(
            UNAUTHORIZED_ACCESS,
            f"{permission} access to {kind} '{shown}' in vhost '{session.vhost.name}' refused for user "
            f"'{session.conn.username}'",
        )


def _no_line_breaks(name: str) -> None:
    if "\n" in name or "\r" in name:
        raise ManagementError(
            "400", f"Bad name '{name}': line feed and carriage return characters not allowed"
        )


def _not_default(name: str) -> None:
    if name == "":
        raise ManagementError("403", "operation not permitted on the default exchange")


def _not_reserved(kind: str, name: str, vhost: str) -> None:
    if is_reserved_name(name):
        raise ManagementError("403", f"{kind} '{name}' in vhost '{vhost}' starts with reserved prefix 'amq.'")


@contextmanager
def _answered() -> Iterator[None]:
    """The core's refusals as 4.0.5 answers them: precondition failed is 409, anything else 400."""
    try:
        yield
    except AMQPError as error:
        status = "409" if error.code == ReplyCode.PRECONDITION_FAILED else "400"
        raise ManagementError(status, error.text) from None
