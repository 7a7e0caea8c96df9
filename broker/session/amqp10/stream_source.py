"""A receiver's source filter-set on a stream, read as RabbitMQ 4.0.5 reads it: the consume arguments the
core's stream reader takes over AMQP 0-9-1 (``x-stream-offset``, ``x-stream-filter``,
``x-stream-match-unfiltered``), so both protocols read a stream through the same `StreamPath`.

RabbitMQ 4.0.5 (rabbit_amqp_session, checked against it in tests/compat/test_amqp10_streams.py) finds each
filter by its key in the filter-set; the value is taken as it is, or unwrapped from a described value whose
descriptor is that same symbol (another descriptor, or another key with the right descriptor, is not read).
Of ``rabbitmq:stream-offset-spec`` it reads a string (``first``, ``last``, ``next``, an interval such as
``10m``), a timestamp (to the second, as AMQP 0-9-1's timestamp) or an integer of any width (the offset);
anything else (a symbol, a boolean) is no spec, so the receiver starts at ``next``. Of
``rabbitmq:stream-filter`` it reads a string or a list of strings (a symbol or an AMQP array is ignored: no
filtering), and of ``rabbitmq:stream-match-unfiltered`` a boolean. The filter-set is echoed whole in the
attach's answer (`OutgoingLink.attached`), whatever of it was read."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from broker.session.amqp10.errors import INTERNAL_ERROR, SessionError
from protocol.amqp10.types import Described, Symbol, Timestamp
from protocol.errors import AMQPError, ChannelError

if TYPE_CHECKING:
    from broker.core.queues.queue import Queue
    from broker.core.streams.stream_queue import StreamPath

OFFSET_SPEC: Final = "rabbitmq:stream-offset-spec"
FILTER: Final = "rabbitmq:stream-filter"
MATCH_UNFILTERED: Final = "rabbitmq:stream-match-unfiltered"


def _value(filter_set: Mapping[Any, Any], key: str) -> Any:
    """The filter under ``key``, unwrapped when described by the same symbol; None when absent or when
    another descriptor describes it."""
    value = filter_set.get(Symbol(key))
    if isinstance(value, Described):
        descriptor = value.descriptor
        if isinstance(descriptor, str) and descriptor == key:
            return value.value
        return None
    return value


def _is_string(value: Any) -> bool:
    return isinstance(value, str) and not isinstance(value, Symbol)


def _offset_argument(spec: Any) -> Any:
    if isinstance(spec, Timestamp):
        # 0-9-1's timestamps are seconds: RabbitMQ 4.0.5 divides the milliseconds by 1000.
        return datetime.datetime.fromtimestamp(int(spec) // 1000, tz=datetime.UTC)
    if _is_string(spec):
        return str(spec)
    if isinstance(spec, int) and not isinstance(spec, bool):
        return int(spec)
    return None


def consume_arguments(filter_set: Mapping[Any, Any] | None) -> dict[str, Any]:
    """The stream consume arguments the source's filter-set asks for (none: start at ``next``)."""
    if not filter_set:
        return {}
    arguments: dict[str, Any] = {}
    offset = _offset_argument(_value(filter_set, OFFSET_SPEC))
    if offset is not None:
        arguments["x-stream-offset"] = offset
    wanted = _value(filter_set, FILTER)
    if _is_string(wanted):
        arguments["x-stream-filter"] = [str(wanted)]
    elif isinstance(wanted, list):
        arguments["x-stream-filter"] = [str(item) for item in wanted if _is_string(item)]
    unfiltered = _value(filter_set, MATCH_UNFILTERED)
    if isinstance(unfiltered, bool):
        arguments["x-stream-match-unfiltered"] = unfiltered
    return arguments


def check_offset(stream: StreamPath, queue: Queue, arguments: Mapping[str, Any]) -> None:
    """A spec the reader refuses ends the session with amqp:internal-error, as RabbitMQ 4.0.5's failed
    consume does: an interval with a bad unit (or none, such as "3") in its words; a spec its parser crashes
    on (the empty string) with "badarg" (4.0.5 adds the Erlang stack trace)."""
    try:
        stream.check_offset(arguments.get("x-stream-offset"))
    except ChannelError:
        raise SessionError(
            INTERNAL_ERROR,
            f"Consuming from queue '{queue.name}' in vhost '{queue.vhost}' failed: invalid_max_age",
        ) from None
    except AMQPError:
        raise SessionError(INTERNAL_ERROR, "badarg") from None
