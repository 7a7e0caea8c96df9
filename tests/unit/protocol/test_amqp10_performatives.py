"""AMQP 1.0 performatives, outcomes and message sections: descriptors, field checks, section order."""

from __future__ import annotations

import pytest

from protocol.amqp10.composite import decode_composite, from_described
from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted, Modified, Rejected
from protocol.amqp10.encode import encode
from protocol.amqp10.errors import DecodeError
from protocol.amqp10.message import decode_message, encode_sections
from protocol.amqp10.performatives import Attach, Close, Flow, Transfer, decode_performative
from protocol.amqp10.sasl import SaslOutcome, decode_sasl
from protocol.amqp10.sections import AmqpSequence, AmqpValue, Data, Footer, Header, MessageSection, Properties
from protocol.amqp10.terminus import Source
from protocol.amqp10.types import Described, Symbol, UInt, ULong, symbols


def test_close_with_an_error_encodes_as_the_spec_lays_it_out() -> None:
    close = Close(error=Error(condition=Symbol("amqp:connection:forced"), description="bye"))
    expected = (
        bytes.fromhex("0053 18 c0 25 01")  # close: list8 of one field
        + bytes.fromhex("0053 1d c0 1f 03")  # error: condition, description and a null info
        + bytes.fromhex("a3 16")
        + b"amqp:connection:forced"
        + bytes.fromhex("a1 03")
        + b"bye"
        + bytes.fromhex("40")
    )
    assert encode(close) == expected
    assert decode_performative(expected) == (close, b"")


def test_every_field_is_written_as_rabbitmq_writes_it_and_absent_fields_read_as_none() -> None:
    # RabbitMQ 4.0.5 writes a close without an error as a list of one null, and a composite without fields
    # (accepted) as list0.
    assert encode(Close()) == bytes.fromhex("005318 c0 02 01 40")
    assert encode(Accepted()) == bytes.fromhex("00532445")
    flow = Flow(incoming_window=1, next_outgoing_id=2, outgoing_window=3)
    assert encode(flow) == bytes.fromhex("005313 c0 0f 0b 40 5201 5202 5203 40 40 40 40 40 40 40")
    assert decode_performative(encode(flow))[0] == flow
    # A peer may omit trailing nulls (part 1, 1.4): the omitted fields read as None.
    assert decode_performative(bytes.fromhex("005313 c0 08 04 40 5201 5202 5203"))[0] == flow


def test_symbolic_descriptors_are_read_too() -> None:
    value = Described(Symbol("amqp:rejected:list"), [Described(Symbol("amqp:error:list"), [Symbol("x:y")])])
    assert from_described(value) == Rejected(error=Error(condition=Symbol("x:y")))


def test_a_single_symbol_reads_as_a_one_element_multiple() -> None:
    attach = Described(
        ULong(0x12), ["l", UInt(0), True, None, None, None, None, None, None, None, None, Symbol("c")]
    )
    decoded, _ = decode_performative(encode(attach))
    assert isinstance(decoded, Attach)
    assert decoded.offered_capabilities == (Symbol("c"),)
    assert encode(decoded) != encode(attach)  # re-encoded as an array of symbols, as RabbitMQ sends them
    assert decode_performative(encode(decoded))[0] == decoded


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Described(ULong(0x14), []), "mandatory field handle is absent"),
        (Described(ULong(0x14), ["0"]), "field handle is not of type uint"),
        (Described(ULong(0x14), [ULong(1 << 40)]), "field handle is not of type uint"),
        (
            Described(ULong(0x12), ["l", 0, True, None, None, "not a source"]),
            "field source is not of type composite",
        ),
        (Described(ULong(0x24), [None]), "1 fields, at most 0 defined"),
        (Described(ULong(0x24), {}), "a list expected"),
        (Described(ULong(0x10), [Symbol("container")]), "field container-id is not of type string"),
        (Described(ULong(0x28), [None, None, "never"]), "field expiry-policy is not of type symbol"),
    ],
)
def test_fields_of_the_wrong_type_are_decode_errors(value: Described, text: str) -> None:
    with pytest.raises(DecodeError, match=text):
        decode_composite(encode(value))


def test_a_frame_body_must_be_a_performative() -> None:
    with pytest.raises(DecodeError, match="not a performative"):
        decode_performative(encode(Accepted()))
    with pytest.raises(DecodeError, match="not a SASL frame"):
        decode_sasl(encode(Accepted()))
    with pytest.raises(DecodeError, match="after the SASL frame"):
        decode_sasl(encode(SaslOutcome(code=0)) + b"\x40")


def test_unknown_descriptors_stay_described() -> None:
    coordinator = Described(Symbol("amqp:coordinator:list"), [symbols("amqp:local-transactions")])
    attach = Attach(name="txn", handle=0, role=False, source=Source(), target=coordinator)
    assert decode_performative(encode(attach))[0] == attach


def test_a_transfer_payload_is_what_follows_the_performative() -> None:
    state = Modified(delivery_failed=True, message_annotations={Symbol("x-opt-reason"): "r"})
    transfer = Transfer(handle=0, delivery_id=5, delivery_tag=b"\x00\x01", settled=False, state=state)
    payload = encode_sections([AmqpValue("v")])
    assert decode_performative(encode(transfer) + payload) == (transfer, payload)


def test_message_sections_in_order_with_the_bare_message_octets() -> None:
    properties = Properties(message_id=ULong(7), to="/queues/q", creation_time=1_700_000_000_000)
    sections: list[MessageSection] = [
        Header(durable=True),
        properties,
        Data(b"a"),
        Data(b"b"),
        Footer({Symbol("k"): 1}),
    ]
    payload = encode_sections(sections)
    message = decode_message(payload)
    assert message.header == Header(durable=True)
    assert message.properties == properties
    assert message.body == (Data(b"a"), Data(b"b"))
    assert message.footer == Footer({Symbol("k"): 1})
    assert message.bare == encode(properties) + encode(Data(b"a")) + encode(Data(b"b"))
    assert [s.raw for s in message.sections] == [encode(s) for s in sections]


@pytest.mark.parametrize(
    ("sections", "text"),
    [
        ([Data(b"x"), Header()], "Header section out of order"),
        ([Properties(), Properties()], "Properties section out of order"),
        ([AmqpValue(1), AmqpValue(2)], "after a AmqpValue body section"),
        ([Data(b"x"), AmqpSequence([1])], "after a Data body section"),
    ],
)
def test_sections_out_of_the_specs_order_are_decode_errors(sections: list[MessageSection], text: str) -> None:
    with pytest.raises(DecodeError, match=text):
        decode_message(encode_sections(sections))


def test_a_section_with_the_wrong_value_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="binary expected"):
        decode_message(encode(Described(ULong(0x75), "not binary")))
    with pytest.raises(DecodeError, match="not a message section"):
        decode_message(encode(Described(ULong(0x99), [])))


def test_a_descriptor_that_is_neither_ulong_nor_symbol_describes_nothing_known() -> None:
    # Found by the fuzzer: a described descriptor holding a list, unhashable in the descriptor lookup.
    odd = Described(Described(ULong(0x10), [1]), [])
    with pytest.raises(DecodeError, match="not a performative"):
        decode_performative(encode(odd))
    with pytest.raises(DecodeError, match="not a message section"):
        decode_message(encode(odd))
