"""A transfer's payload as message sections (part 3, 3.2), each with the octets it came in.

A broker changes only the message's header and annotations: the bare message (properties, application
properties, body) is immutable once sent (3.2) and is forwarded as the octets the publisher sent, as RabbitMQ
4's mc_amqp does. ``Message.bare`` is those octets, and each ``Section`` keeps its own.

The sections must come in the spec's order: header, delivery-annotations, message-annotations, properties,
application-properties, the body, footer; each at most once, except that the body is one or more data
sections, one or more amqp-sequence sections, or one amqp-value section. Anything else is
``amqp:decode-error``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from protocol.amqp10.decode import decode_value
from protocol.amqp10.encode import write
from protocol.amqp10.errors import DecodeError
from protocol.amqp10.sections import (
    AmqpSequence,
    AmqpValue,
    ApplicationProperties,
    BodySection,
    Data,
    DeliveryAnnotations,
    Footer,
    Header,
    MessageAnnotations,
    MessageSection,
    Properties,
    section_of,
)

# The place of each section kind in a message; the body kinds share one.
_RANK: Final[dict[type, int]] = {
    Header: 0,
    DeliveryAnnotations: 1,
    MessageAnnotations: 2,
    Properties: 3,
    ApplicationProperties: 4,
    Data: 5,
    AmqpSequence: 5,
    AmqpValue: 5,
    Footer: 6,
}
_BARE_FIRST: Final = 3
_BODY: Final = 5


@dataclass(frozen=True, slots=True)
class Section:
    """A decoded section and the octets it was encoded in."""

    section: MessageSection
    raw: bytes


@dataclass(frozen=True, slots=True)
class Message:
    """The sections of one message, by kind; ``sections`` in wire order with their octets."""

    sections: tuple[Section, ...]
    header: Header | None = None
    delivery_annotations: DeliveryAnnotations | None = None
    message_annotations: MessageAnnotations | None = None
    properties: Properties | None = None
    application_properties: ApplicationProperties | None = None
    body: tuple[BodySection, ...] = ()
    footer: Footer | None = None

    @property
    def bare(self) -> bytes:
        """The bare message's octets: properties, application properties and body, as received."""
        return b"".join(s.raw for s in self.sections if _BARE_FIRST <= _RANK[type(s.section)] <= _BODY)


def decode_sections(payload: bytes | memoryview) -> list[Section]:
    """The sections of ``payload`` in order, checked against the spec's order."""
    view = memoryview(payload)
    sections: list[Section] = []
    pos = 0
    last_rank = -1
    body_kind: type | None = None
    while pos < len(view):
        value, end = decode_value(view, pos)
        section = section_of(value)
        rank = _RANK[type(section)]
        if rank == _BODY and body_kind is not None:
            if type(section) is not body_kind or body_kind is AmqpValue:
                raise DecodeError(
                    f"{type(section).__name__} section after a {body_kind.__name__} body section"
                )
        elif rank <= last_rank:
            raise DecodeError(f"{type(section).__name__} section out of order")
        if rank == _BODY:
            body_kind = type(section)
        last_rank = rank
        sections.append(Section(section, bytes(view[pos:end])))
        pos = end
    return sections


def decode_message(payload: bytes | memoryview) -> Message:
    """``payload`` (a whole transfer payload, every frame of a multi-frame delivery joined) as a Message."""
    sections = decode_sections(payload)
    by_kind: dict[str, object] = {}
    body: list[BodySection] = []
    for entry in sections:
        section = entry.section
        if isinstance(section, Data | AmqpSequence | AmqpValue):
            body.append(section)
        else:
            by_kind[_FIELD[type(section)]] = section
    return Message(tuple(sections), body=tuple(body), **by_kind)  # type: ignore[arg-type]


def encode_sections(sections: Iterable[MessageSection]) -> bytes:
    """The payload octets of ``sections`` (in the order given; the caller keeps the spec's order)."""
    out = bytearray()
    for section in sections:
        write(out, section)
    return bytes(out)


_FIELD: Final[dict[type, str]] = {
    Header: "header",
    DeliveryAnnotations: "delivery_annotations",
    MessageAnnotations: "message_annotations",
    Properties: "properties",
    ApplicationProperties: "application_properties",
    Footer: "footer",
}
