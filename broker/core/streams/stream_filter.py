"""Stream filtering (RabbitMQ 3.13, streams.md "Filtering"): a publisher tags a message with the
``x-stream-filter-value`` header; a consumer asks for ``x-stream-filter`` (a string or an array of strings)
and, with ``x-stream-match-unfiltered`` true, also for messages that carry no filter value.

RabbitMQ filters whole chunks through a Bloom filter, so it may deliver extra messages and clients must
filter again; WarrenMQ filters message by message, which is one of the outcomes RabbitMQ allows (no false
positives). Implemented from RabbitMQ's documentation: the 3.10 oracle has no filtering to compare with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker.core.model.arguments import as_text, is_amqp_string
from broker.core.model.message import Message

FILTER_VALUE = "x-stream-filter-value"


@dataclass(frozen=True, slots=True)
class StreamFilter:
    values: frozenset[str]
    match_unfiltered: bool

    def accepts(self, message: Message) -> bool:
        value = message.x_header(FILTER_VALUE)
        if value is None or not is_amqp_string(value):
            return self.match_unfiltered
        return as_text(value) in self.values


def consumer_filter(arguments: Mapping[str, Any]) -> StreamFilter | None:
    """The consumer's filter, or None to receive everything. Values that are not strings are ignored, as
    rabbit_stream_queue keeps only the longstr entries of the argument."""
    spec = arguments.get("x-stream-filter")
    if spec is None:
        return None
    items = spec if isinstance(spec, list) else [spec]
    values = frozenset(as_text(item) for item in items if is_amqp_string(item))
    if not values:
        return None
    return StreamFilter(values, arguments.get("x-stream-match-unfiltered") is True)
