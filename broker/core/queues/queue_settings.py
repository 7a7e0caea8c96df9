"""Queue arguments (x-message-ttl, x-max-length, x-dead-letter-exchange, x-queue-type …) checked and compiled
once at declare time, with RabbitMQ's error texts (rabbit_amqqueue:check_arguments, 3.10.8-verified).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.core.model.arguments import amqp_type_name, as_text, is_amqp_string
from broker.core.model.profile import DEFAULT_PROFILE, Profile
from protocol.errors import ChannelError, HardError, ReplyCode

DROP_HEAD = "drop-head"
REJECT_PUBLISH = "reject-publish"
REJECT_PUBLISH_DLX = "reject-publish-dlx"
_OVERFLOWS = (DROP_HEAD, REJECT_PUBLISH, REJECT_PUBLISH_DLX)
MAX_PRIORITY = 255

CLASSIC, QUORUM, STREAM = "classic", "quorum", "stream"
# The arguments each queue type accepts (capabilities/0 of rabbit_classic_queue, rabbit_quorum_queue and
# rabbit_stream_queue); a known argument outside its type's list is refused "... of queue type rabbit_X".
_TYPE_ARGUMENTS = {
    CLASSIC: frozenset(
        {
            "x-expires", "x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key",
            "x-max-length", "x-max-length-bytes", "x-max-in-memory-length", "x-max-in-memory-bytes",
            "x-max-priority", "x-overflow", "x-queue-mode", "x-single-active-consumer", "x-queue-type",
            "x-queue-master-locator", "x-queue-version",
        }
    ),
    QUORUM: frozenset(
        {
            "x-dead-letter-exchange", "x-dead-letter-routing-key", "x-dead-letter-strategy", "x-expires",
            "x-max-length", "x-max-length-bytes", "x-max-in-memory-length", "x-max-in-memory-bytes",
            "x-overflow", "x-single-active-consumer", "x-queue-type", "x-quorum-initial-group-size",
            "x-delivery-limit", "x-message-ttl", "x-queue-leader-locator",
        }
    ),
    STREAM: frozenset(
        {
            "x-max-length-bytes", "x-queue-type", "x-max-age", "x-stream-max-segment-size-bytes",
            "x-initial-cluster-size", "x-queue-leader-locator",
        }
    ),
}  # fmt: skip
_KNOWN_ARGUMENTS = frozenset().union(*_TYPE_ARGUMENTS.values())
_ERLANG_MODULE = {
    CLASSIC: "rabbit_classic_queue",
    QUORUM: "rabbit_quorum_queue",
    STREAM: "rabbit_stream_queue",
}


_FIELDS = (
    "queue_type", "message_ttl", "expires", "max_length", "max_length_bytes", "overflow",
    "dead_letter_exchange", "dead_letter_routing_key", "max_priority", "single_active_consumer",
    "delivery_limit", "max_age_ms", "max_segment_size_bytes",
)  # fmt: skip


class QueueSettings:
    """The compiled feature arguments of one queue; ``None`` means the feature is off. Immutable (queues share
    `PLAIN`), compared by value.

    Not a dataclass: its generated methods are compiled at every start. Not a NamedTuple either:
    the message path reads these attributes, and a slot is read faster than a tuple field."""

    __slots__ = _FIELDS

    queue_type: str
    message_ttl: int | None
    expires: int | None
    max_length: int | None
    max_length_bytes: int | None
    overflow: str
    dead_letter_exchange: str | None
    dead_letter_routing_key: str | None
    max_priority: int | None
    single_active_consumer: bool
    delivery_limit: int | None
    # Streams: retention by age and the segment size (x-max-age, x-stream-max-segment-size-bytes).
    max_age_ms: int | None
    max_segment_size_bytes: int | None

    def __init__(
        self,
        queue_type: str = CLASSIC,
        message_ttl: int | None = None,
        expires: int | None = None,
        max_length: int | None = None,
        max_length_bytes: int | None = None,
        overflow: str = DROP_HEAD,
        dead_letter_exchange: str | None = None,
        dead_letter_routing_key: str | None = None,
        max_priority: int | None = None,
        single_active_consumer: bool = False,
        delivery_limit: int | None = None,
        max_age_ms: int | None = None,
        max_segment_size_bytes: int | None = None,
    ) -> None:
        # Through object.__setattr__, as a frozen dataclass's __init__ does: this class refuses assignment.
        init = object.__setattr__
        init(self, "queue_type", queue_type)
        init(self, "message_ttl", message_ttl)
        init(self, "expires", expires)
        init(self, "max_length", max_length)
        init(self, "max_length_bytes", max_length_bytes)
        init(self, "overflow", overflow)
        init(self, "dead_letter_exchange", dead_letter_exchange)
        init(self, "dead_letter_routing_key", dead_letter_routing_key)
        init(self, "max_priority", max_priority)
        init(self, "single_active_consumer", single_active_consumer)
        init(self, "delivery_limit", delivery_limit)
        init(self, "max_age_ms", max_age_ms)
        init(self, "max_segment_size_bytes", max_segment_size_bytes)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"QueueSettings is immutable: cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"QueueSettings is immutable: cannot delete field {name!r}")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QueueSettings):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"QueueSettings({shown})"

    def replace(self, **changes: Any) -> QueueSettings:
        """A copy with ``changes`` (field name -> value), as dataclasses.replace made it."""
        values = {name: getattr(self, name) for name in _FIELDS}
        values.update(changes)
        return QueueSettings(**values)

    @property
    def limited(self) -> bool:
        return self.max_length is not None or self.max_length_bytes is not None


PLAIN = QueueSettings()


def _invalid(key: str, resource: str, reason: str) -> ChannelError:
    return ChannelError(ReplyCode.PRECONDITION_FAILED, f"invalid arg '{key}' for {resource}: {reason}")


def _integer(args: Mapping[str, Any], key: str, resource: str, *, zero_ok: bool = True) -> int | None:
    if key not in args:
        return None
    value = args[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(key, resource, f'"expected integer, got {amqp_type_name(value)}"')
    if value < 0:
        raise _invalid(key, resource, f"{{value_negative,{value}}}")
    if value == 0 and not zero_ok:
        raise _invalid(key, resource, f"{{value_zero,{value}}}")
    return value


def _string(args: Mapping[str, Any], key: str, resource: str) -> str | None:
    if key not in args:
        return None
    value = args[key]
    if not is_amqp_string(value):
        # rabbit_misc:r_arg type check ("invalid type ... for arg ... in queue ...").
        raise ChannelError(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid type '{amqp_type_name(value)}' for arg '{key}' in {resource}",
        )
    return as_text(value)


def compile_settings(
    name: str,
    vhost: str,
    args: Mapping[str, Any],
    durable: bool,
    exclusive: bool,
    auto_delete: bool,
    server_named: bool,
    profile: Profile = DEFAULT_PROFILE,
) -> QueueSettings:
    """Check a NEW queue's arguments in RabbitMQ's order and compile them; PLAIN when none is a feature."""
    resource = f"queue '{name}' in vhost '{vhost}'"
    queue_type = CLASSIC
    if "x-queue-type" in args:
        raw = args["x-queue-type"]
        queue_type = as_text(raw) if is_amqp_string(raw) else str(raw)
        if queue_type not in _TYPE_ARGUMENTS:
            raise _invalid("x-queue-type", resource, f"\"unsupported queue type '{queue_type}'\"")
    if queue_type != CLASSIC:
        _check_replicated(queue_type, resource, durable, exclusive, auto_delete, server_named)
    supported = _TYPE_ARGUMENTS[queue_type]
    for key in args:
        if key in _KNOWN_ARGUMENTS and key not in supported:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg '{key}' for {resource} of queue type {_ERLANG_MODULE[queue_type]}",
            )
    if not any(key in _KNOWN_ARGUMENTS for key in args):
        return PLAIN
    expires = _integer(args, "x-expires", resource, zero_ok=False)
    message_ttl = _integer(args, "x-message-ttl", resource)
    dlx = _string(args, "x-dead-letter-exchange", resource)
    dlrk = _string(args, "x-dead-letter-routing-key", resource)
    if dlrk is not None and dlx is None:
        raise _invalid("x-dead-letter-routing-key", resource, "routing_key_but_no_dlx_defined")
    max_length = _integer(args, "x-max-length", resource)
    max_length_bytes = _integer(args, "x-max-length-bytes", resource)
    max_priority = _integer(args, "x-max-priority", resource)
    if max_priority is not None and max_priority > MAX_PRIORITY:
        raise _invalid("x-max-priority", resource, f"{{max_value_exceeded,{max_priority}}}")
    overflow = DROP_HEAD
    if "x-overflow" in args:
        raw = args["x-overflow"]
        overflow = as_text(raw) if is_amqp_string(raw) else ""
        if overflow not in _OVERFLOWS:
            raise _invalid("x-overflow", resource, "invalid_overflow")
    if "x-queue-mode" in args:
        mode = args["x-queue-mode"]
        mode_text = as_text(mode) if is_amqp_string(mode) else str(mode)
        if mode_text not in ("default", "lazy"):
            raise _invalid("x-queue-mode", resource, f"\"unsupported queue mode '{mode_text}'\"")
        if not profile.queue_mode_allowed:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg 'x-queue-mode' for {resource} of queue type rabbit_classic_queue",
            )
    single_active = False
    if "x-single-active-consumer" in args:
        value = args["x-single-active-consumer"]
        if not isinstance(value, bool):
            raise _invalid(
                "x-single-active-consumer", resource, f"{{unacceptable_type,{amqp_type_name(value)}}}"
            )
        single_active = value
    delivery_limit = None
    if queue_type == QUORUM:
        if "x-delivery-limit" in args:
            limit = args["x-delivery-limit"]
            # A negative limit means unlimited (accepted by RabbitMQ 3.10.8).
            if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
                delivery_limit = limit
        else:
            delivery_limit = profile.quorum_delivery_limit
    max_age_ms = max_age(args, resource)
    segment_size = _integer(args, "x-stream-max-segment-size-bytes", resource)
    _integer(args, "x-initial-cluster-size", resource, zero_ok=False)
    return QueueSettings(
        queue_type=queue_type,
        message_ttl=message_ttl,
        expires=expires,
        max_length=max_length,
        max_length_bytes=max_length_bytes,
        overflow=overflow,
        dead_letter_exchange=dlx,
        dead_letter_routing_key=dlrk,
        # x-max-priority 0 is accepted and means no priorities (RabbitMQ 3.10.8).
        max_priority=max_priority or None,
        single_active_consumer=single_active,
        delivery_limit=delivery_limit,
        max_age_ms=max_age_ms,
        max_segment_size_bytes=segment_size,
    )


_AGE_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "D": 86_400_000}
_AGE_UNIT_MS |= {"M": 30 * _AGE_UNIT_MS["D"], "Y": 365 * _AGE_UNIT_MS["D"]}


def max_age(args: Mapping[str, Any], resource: str) -> int | None:
    """x-max-age ("7D", "12h", "30m", "10s", "2M", "1Y") in ms, checked as rabbit_amqqueue:check_max_age
    (3.10.8): a positive integer then one unit; no leading digits crashes RabbitMQ's list_to_integer, which
    answers a bare 541 INTERNAL_ERROR and closes the connection."""
    if "x-max-age" not in args:
        return None
    value = args["x-max-age"]
    if not is_amqp_string(value):
        raise _invalid("x-max-age", resource, f"{{unacceptable_type,{amqp_type_name(value)}}}")
    text = as_text(value)
    digits = len(text) - len(text.lstrip("0123456789"))
    if digits == 0:
        raise HardError(ReplyCode.INTERNAL_ERROR, "")
    amount, unit = int(text[:digits]), text[digits:]
    if amount <= 0 or unit not in _AGE_UNIT_MS:
        raise _invalid("x-max-age", resource, "invalid_max_age")
    return amount * _AGE_UNIT_MS[unit]


def _check_replicated(
    queue_type: str, resource: str, durable: bool, exclusive: bool, auto_delete: bool, server_named: bool
) -> None:
    """Quorum and stream queues: durable, not exclusive, not auto-delete, not server-named (3.10.8 texts)."""
    if server_named:
        raise ChannelError(
            ReplyCode.PRECONDITION_FAILED,
            f"Cannot declare a server-named queue for type {_ERLANG_MODULE[queue_type]}",
        )
    # rabbit_quorum_queue / rabbit_stream_queue run_checks: auto-delete, then exclusive-owner, then
    # non-durable.
    for bad, prop in (
        (auto_delete, "auto-delete"),
        (exclusive, "exclusive-owner"),
        (not durable, "non-durable"),
    ):
        if bad:
            raise ChannelError(ReplyCode.PRECONDITION_FAILED, f"invalid property '{prop}' for {resource}")
