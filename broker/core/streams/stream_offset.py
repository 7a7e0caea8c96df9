"""Where a stream consumer starts: the ``x-stream-offset`` consume argument resolved against a log, as
RabbitMQ 3.10.8 does over AMQP 0-9-1 (checked against it in tests/compat/scenarios/streams.py)."""

from __future__ import annotations

import datetime
from typing import Any

from broker.core.model.arguments import as_text, is_amqp_string
from broker.core.queues.queue_settings import max_age
from broker.core.streams.stream_log import StreamLog
from protocol.errors import ChannelError, HardError, ReplyCode


def start_offset(log: StreamLog, spec: Any, now_ms: int, resource: str, past_tail_waits: bool = False) -> int:
    """``first``, ``last``, ``next`` (the default), an integer offset (below the head starts at the head;
    past the tail starts at the tail, or with ``past_tail_waits`` (4.0.5) waits for that offset), an AMQP
    timestamp, or an interval string such as
    ``1h`` meaning that long before now. A string with digits and a bad unit is refused with 406; one with no
    leading digits, a boolean or another type crashes RabbitMQ's parser: a bare 541 (3.10.8)."""
    if spec is None:
        return log.next_offset
    if isinstance(spec, bool):
        raise HardError(ReplyCode.INTERNAL_ERROR, "")  # RabbitMQ 3.10.8 crashes on it: a bare 541
    if isinstance(spec, datetime.datetime):
        return log.offset_at(int(spec.replace(tzinfo=spec.tzinfo or datetime.UTC).timestamp() * 1000))
    if isinstance(spec, int) and not isinstance(spec, bool):
        start = max(spec, log.first_offset)
        return start if past_tail_waits else min(start, log.next_offset)
    if is_amqp_string(spec):
        text = as_text(spec)
        if text == "first":
            return log.first_offset
        if text == "next":
            return log.next_offset
        if text == "last":
            # The last user chunk's first offset (osiris skips a tail snapshot's); each append is one chunk.
            return log.last_message_offset
        try:
            interval_ms = max_age({"x-max-age": text}, resource)
        except ChannelError:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg 'x-stream-offset' for {resource}: "
                f'{{invalid_stream_offset_arg,{{longstr,<<"{text}">>}}}}',
            ) from None
        assert interval_ms is not None
        return log.offset_at(now_ms - interval_ms)
    # Any other type (an array, a table, a float...) crashes RabbitMQ's offset parser: a bare 541.
    raise HardError(ReplyCode.INTERNAL_ERROR, "")
