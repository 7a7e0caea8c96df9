"""A raw AMQP 1.0 load generator for perf/amqp10_cost.py: sockets and protocol/amqp10's codec, no library.

The same scenarios as perf/amqp10_load.py (python-qpid-proton), at a fraction of the client's cost per
message: transfers are written from one pre-encoded frame with the delivery-id and tag packed in (many per
``send``), a received transfer is read only as far as its delivery-id, and the codec encodes and decodes
only the other performatives (open, begin, attach, flow, disposition, close). One thread, two sockets
(sender and receiver connections), a selector.

Flow control as the specification has it (AMQP 1.0, 2.5.6 and 2.6.7): the sender sends while it has link
credit, room in the broker's session incoming window and fewer than ``window`` transfers without an outcome;
the receiver grants ``credit`` and tops it up (with its session window) each time half is spent, and settles
with ``accepted`` dispositions of ``ack_batch`` contiguous delivery-ids (first/last, 2.7.6).
"""

from __future__ import annotations

import selectors
import socket
import struct
import time
from typing import Any

from amqp10_load import MESSAGE, LoadResult

from protocol.amqp10.delivery_states import Accepted
from protocol.amqp10.frames import (
    AMQP_HEADER,
    SASL_HEADER,
    TYPE_SASL,
    FrameScanner,
    ProtocolHeader,
    encode_frame,
)
from protocol.amqp10.performatives import (
    Attach,
    Begin,
    Close,
    Detach,
    Disposition,
    End,
    Flow,
    Open,
    Performative,
    decode_performative,
    encode_performative,
)
from protocol.amqp10.sasl import SaslInit, SaslMechanisms, SaslOutcome, decode_sasl
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Symbol, UByte, UInt

SESSION_WINDOW = 65536  # the receiver's incoming window, renewed with every credit top-up
UINT = 2**32
# A transfer on handle 0 (2.7.5) as a described list8: handle uint0, delivery-id uint (4 octets),
# delivery-tag vbin8 (4 octets), message-format uint0, settled false; then the message. The frame header
# (2.3.1): size, doff 2, type 0 (AMQP), channel 0.
_TRANSFER = struct.Struct(f">IBBH3s3sBBI2sIBB{len(MESSAGE)}s")
_TRANSFER_SIZE = _TRANSFER.size


def _transfer(delivery_id: int) -> bytes:
    return _TRANSFER.pack(
        _TRANSFER_SIZE, 2, 0, 0, b"\x00\x53\x14", b"\xc0\x0f\x05", 0x43,
        0x70, delivery_id, b"\xa0\x04", delivery_id, 0x43, 0x42, MESSAGE,
    )  # fmt: skip


def _uint_at(body: bytes, pos: int) -> tuple[int, int]:
    """A uint field at ``pos`` (uint0, smalluint or uint, 1.6.9) and the position after it."""
    code = body[pos]
    if code == 0x43:
        return 0, pos + 1
    if code == 0x52:
        return body[pos + 1], pos + 2
    if code == 0x70:
        return int.from_bytes(body[pos + 1 : pos + 5], "big"), pos + 5
    raise ValueError(f"a uint field with constructor {code:#x}")


def _delivery_id(body: bytes) -> int:
    """A transfer's delivery-id, its second field (after the handle)."""
    pos = 6 if body[3] == 0xC0 else 12  # list8: size and count in one octet each; list32: four
    _, pos = _uint_at(body, pos)
    return _uint_at(body, pos)[0]


class Link:
    """One connection with one session and one link on it: the handshake, then frames both ways."""

    def __init__(self, port: int, address: str, receiver: bool, result: LoadResult) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.scanner = FrameScanner(max_frame_size=0)
        self.receiver, self.result = receiver, result
        self.out = bytearray()
        self.pending: list[Any] = []
        self.credit = self.remote_window = 0  # the sender's link credit and the broker's incoming window
        self.next_outgoing = self.delivery_count = 0
        self._sasl()
        self.send(AMQP_HEADER)
        self.perform(Open(container_id="amqp10-cost", hostname="vhost:/", max_frame_size=UInt(131072)))
        self.perform(
            Begin(next_outgoing_id=0, incoming_window=SESSION_WINDOW, outgoing_window=SESSION_WINDOW)
        )
        source, target = (
            (Source(address=address), Target()) if receiver else (Source(), Target(address=address))
        )
        self.perform(
            Attach(
                name=f"amqp10-cost-{'receiver' if receiver else 'sender'}",
                handle=UInt(0),
                role=receiver,
                snd_settle_mode=UByte(0),  # unsettled: at least once
                rcv_settle_mode=UByte(0),
                initial_delivery_count=None if receiver else UInt(0),
                source=source,
                target=target,
            )
        )
        self.flush_blocking()
        begun = self._wait_for(Begin)
        self.remote_window = begun.incoming_window
        self.broker_next_outgoing = begun.next_outgoing_id
        attached = self._wait_for(Attach)
        self.broker_delivery_count = attached.initial_delivery_count or 0
        self.sock.setblocking(False)

    def _read(self) -> list[Any]:
        data = self.sock.recv(262144)
        if not data:
            raise RuntimeError("the broker closed the connection")
        return self.scanner.feed(data)

    def _sasl(self) -> None:
        self.send(SASL_HEADER)
        self.flush_blocking()
        frames: list[Any] = []
        while not any(getattr(f, "frame_type", None) == TYPE_SASL for f in frames):
            frames += self._read()
        mechanisms = decode_sasl(frames[-1].body)
        assert isinstance(mechanisms, SaslMechanisms), mechanisms
        init = SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\0guest\0guest")
        self.send(encode_frame(encode_performative(init), frame_type=TYPE_SASL))  # type: ignore[arg-type]
        self.flush_blocking()
        frames = []
        while not frames:
            frames = self._read()
        outcome = decode_sasl(frames[0].body)
        if not isinstance(outcome, SaslOutcome) or outcome.code != 0:
            raise RuntimeError(f"SASL PLAIN refused: {outcome}")
        self.scanner.expect_protocol_header()

    def _wait_for(self, kind: type[Any]) -> Any:
        """The next ``kind`` performative from the broker (during the handshake); others wait in pending."""
        while True:
            for index, performative in enumerate(self.pending):
                if isinstance(performative, kind):
                    return self.pending.pop(index)
            for item in self._read():
                if not isinstance(item, ProtocolHeader) and item.body:
                    performative = decode_performative(item.body)[0]
                    self._check(performative)
                    self.pending.append(performative)

    @staticmethod
    def _check(performative: Performative) -> None:
        if isinstance(performative, (Detach, End, Close)):
            raise RuntimeError(f"the broker sent {performative}")

    def send(self, data: bytes) -> None:
        self.out += data

    def perform(self, performative: Performative) -> None:
        self.out += encode_frame(encode_performative(performative))

    def flush_blocking(self) -> None:
        self.sock.sendall(self.out)
        self.out.clear()

    def flush(self) -> None:
        """Write what the socket takes now (non-blocking); the rest waits for writability."""
        if self.out:
            try:
                sent = self.sock.send(self.out)
            except BlockingIOError:
                return
            del self.out[:sent]

    def on_body(self, body: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Close (2.4.3) and wait for the broker's close, so that it has processed everything before."""
        self.sock.setblocking(True)
        self.sock.settimeout(30)
        self.perform(Close())
        self.flush_blocking()
        while True:
            for item in self._read():
                frame = not isinstance(item, ProtocolHeader) and item.body
                if frame and isinstance(decode_performative(item.body)[0], Close):
                    return


class Sender(Link):
    """Unsettled transfers while credit, the broker's session window and ``window`` allow."""

    def __init__(self, port: int, address: str, result: LoadResult, window: int) -> None:
        super().__init__(port, address, False, result)
        self.window = window
        for performative in self.pending:
            self.on_performative(performative)
        self.pending.clear()

    def on_body(self, body: bytes) -> None:
        self.on_performative(decode_performative(body)[0])

    def on_performative(self, performative: Performative) -> None:
        if isinstance(performative, Flow):
            if performative.next_incoming_id is not None:
                self.remote_window = (
                    performative.next_incoming_id + performative.incoming_window - self.next_outgoing
                )
            if performative.handle == 0 and performative.link_credit is not None:
                count = performative.delivery_count or 0
                self.credit = count + performative.link_credit - self.delivery_count
        elif isinstance(performative, Disposition):
            last = performative.last if performative.last is not None else performative.first
            settled = (last - performative.first) % UINT + 1
            if isinstance(performative.state, Accepted):
                self.result.accepted += settled
            else:
                self.result.refused += settled
        else:
            self._check(performative)

    def pump(self) -> None:
        result = self.result
        in_flight = self.next_outgoing - result.accepted - result.refused
        count = min(
            self.credit, self.remote_window, self.window - in_flight, result.messages - self.next_outgoing
        )
        if count > 0:
            first = self.next_outgoing
            self.out += b"".join([_transfer(delivery_id) for delivery_id in range(first, first + count)])
            self.next_outgoing += count
            self.delivery_count += count
            self.credit -= count
            self.remote_window -= count


class Receiver(Link):
    """Link credit topped up at half, accepted dispositions in batches of contiguous delivery-ids."""

    def __init__(self, port: int, address: str, result: LoadResult, credit: int, ack_batch: int) -> None:
        super().__init__(port, address, True, result)
        for performative in self.pending:
            self._check(performative)
        self.pending.clear()
        self.credit, self.ack_batch, self.spent = credit, ack_batch, 0
        self.first = self.last = -1
        self.grant()

    def grant(self) -> None:
        received = self.result.received
        self.perform(
            Flow(
                next_incoming_id=UInt((self.broker_next_outgoing + received) % UINT),
                incoming_window=SESSION_WINDOW,
                next_outgoing_id=0,
                outgoing_window=SESSION_WINDOW,
                handle=UInt(0),
                delivery_count=UInt((self.broker_delivery_count + received) % UINT),
                link_credit=UInt(self.credit),
            )
        )

    def on_body(self, body: bytes) -> None:
        if body[:3] != b"\x00\x53\x14":  # not a transfer: a flow, or what ends the run
            self._check(decode_performative(body)[0])
            return
        delivery_id = _delivery_id(body)
        if self.first >= 0 and delivery_id != (self.last + 1) % UINT:
            self.settle()
        if self.first < 0:
            self.first = delivery_id
        self.last = delivery_id
        self.result.received += 1
        batch = (delivery_id - self.first) % UINT + 1
        if batch >= self.ack_batch or self.result.received >= self.result.messages:
            self.settle()
        self.spent += 1
        if self.spent * 2 >= self.credit:
            self.grant()
            self.spent = 0

    def settle(self) -> None:
        if self.first < 0:
            return
        ranges = [(self.first, self.last)]
        if self.last < self.first:  # the delivery-ids wrapped past 2^32 - 1
            ranges = [(self.first, UINT - 1), (0, self.last)]
        for first, last in ranges:
            self.perform(
                Disposition(role=True, first=UInt(first), last=UInt(last), settled=True, state=Accepted())
            )
        self.first = self.last = -1


def run_raw(
    port: int,
    queue: str,
    scenario: str,
    messages: int,
    window: int = 1000,
    credit: int = 1000,
    ack_batch: int = 100,
    timeout_s: float = 120.0,
) -> LoadResult:
    """Run ``scenario`` once; returns when every message has its outcome (and delivery), or on an error."""
    result = LoadResult(scenario, messages)
    address = f"/queues/{queue}"
    links: list[Link] = []
    try:
        sender = Sender(port, address, result, window)
        links.append(sender)
        if scenario == "pubsub":
            links.append(Receiver(port, address, result, credit, ack_batch))
        _pump(sender, links, time.monotonic() + timeout_s)
        for link in links:
            link.close()
    except (OSError, RuntimeError, ValueError) as error:
        result.error = result.error or f"{type(error).__name__}: {error}"
    finally:
        for link in links:
            link.sock.close()
    result.moved = result.received if scenario == "pubsub" else result.accepted
    return result


def _pump(sender: Sender, links: list[Link], deadline: float) -> None:
    result = sender.result
    selector = selectors.DefaultSelector()
    for link in links:
        selector.register(link.sock, selectors.EVENT_READ, link)
    writing = dict.fromkeys(links, False)
    started = time.monotonic()
    while result.accepted + result.refused < result.messages or (
        len(links) > 1 and result.received < result.messages
    ):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out: {result}")
        sender.pump()
        for link in links:
            link.flush()
            if bool(link.out) != writing[link]:
                writing[link] = bool(link.out)
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if link.out else 0)
                selector.modify(link.sock, events, link)
        for key, mask in selector.select(timeout=1.0):
            if mask & selectors.EVENT_READ:
                link = key.data
                try:
                    items = link._read()
                except BlockingIOError:
                    continue
                for item in items:
                    if not isinstance(item, ProtocolHeader) and item.body:
                        link.on_body(item.body)
    result.seconds = time.monotonic() - started
    selector.close()
