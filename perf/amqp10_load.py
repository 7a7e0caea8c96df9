"""The python-qpid-proton load generator of perf/amqp10_cost.py (``--client proton``), event-driven.

Proton's engine (C) does the framing, the session windows and the disposition ranges; Python runs once per
event. What makes it cheaper than proton's own MessagingHandler: the message is encoded once and streamed as
bytes to every delivery, and received transfers are never decoded into ``proton.Message`` (their bytes are
read off the link and dropped), so the client costs a few µs per message and nothing per message section.

Two scenarios, both at-least-once:

- ``pubsub``: a sender connection publishes unsettled transfers to ``/queues/:queue`` with at most
  ``window`` unsettled at a time (settled by the client as each outcome arrives), and a receiver connection
  on the same queue holds ``credit`` link credit (topped up once half is spent) and settles with
  ``accepted`` in batches of ``ack_batch`` deliveries: proton writes each batch of contiguous settled
  deliveries with one state as one disposition frame with a first/last range (AMQP 1.0, 2.7.6).
- ``publish``: the sender alone, until every message has its ``accepted`` outcome.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field

from proton import Delivery, Event, Link, Receiver, Sender
from proton._reactor import Task
from proton.handlers import EndpointStateHandler, MessagingHandler
from proton.reactor import Container

BODY_BYTES = 16
# The bare message as sent every time: a header section (AMQP 1.0, 3.2.1) with durable=false, so that
# neither broker stores it (the queue is not durable either), and one data section (3.2.6) of 16 bytes.
# Described list: 0x00 0x53 0x70 (header), list8 of size 2 and 1 field, false.
HEADER_TRANSIENT = bytes((0x00, 0x53, 0x70, 0xC0, 0x02, 0x01, 0x42))
# Described binary: 0x00 0x53 0x75 (data), vbin8 of 16 bytes.
DATA_16 = bytes((0x00, 0x53, 0x75, 0xA0, BODY_BYTES)) + b"0123456789abcdef"
MESSAGE = HEADER_TRANSIENT + DATA_16
SCENARIOS = ("pubsub", "publish")


@dataclass
class LoadResult:
    """What one run did: messages published and accepted, messages received, and the seconds from the
    first transfer sent to the last outcome or delivery."""

    scenario: str
    messages: int
    accepted: int = 0
    refused: int = 0
    received: int = 0
    seconds: float = 0.0
    error: str | None = None
    moved: int = field(init=False, default=0)

    @property
    def rate(self) -> float:
        return self.moved / self.seconds if self.seconds > 0 else 0.0


class LoadGenerator(MessagingHandler):
    """One run of a scenario against ``url`` (``amqp://user:password@host:port``)."""

    def __init__(
        self,
        url: str,
        queue: str,
        scenario: str,
        messages: int,
        window: int,
        credit: int,
        ack_batch: int,
        timeout_s: float,
    ) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        # Only the endpoint bookkeeping (open/close, errors): MessagingHandler's incoming and outgoing
        # handlers decode every received message and raise an event per outcome, which this client skips.
        self.handlers = [EndpointStateHandler(True, weakref.proxy(self))]
        self.url, self.address = url, f"/queues/{queue}"
        self.result = LoadResult(scenario, messages)
        self.window, self.credit, self.ack_batch = window, credit, ack_batch
        self.timeout_s = timeout_s
        self.sent = 0
        self.unsettled_received: list[Delivery] = []
        self.credit_spent = 0
        self.started = 0.0
        self.receiver: Receiver | None = None
        self.connections: list[object] = []
        self.timer: Task | None = None

    def on_start(self, event: Event) -> None:
        container = event.container
        sending = container.connect(self.url, allowed_mechs="PLAIN")
        self.connections.append(sending)
        container.create_sender(sending, self.address)
        if self.result.scenario == "pubsub":
            receiving = container.connect(self.url, allowed_mechs="PLAIN")
            self.connections.append(receiving)
            self.receiver = container.create_receiver(receiving, self.address)
            self.receiver.flow(self.credit)
        self.timer = container.schedule(self.timeout_s, self)

    def on_timer_task(self, event: Event) -> None:
        if not self._done():
            self.result.error = f"timed out after {self.timeout_s} s"
            self._finish()

    def on_link_flow(self, event: Event) -> None:
        link = event.link
        if link is not None and link.is_sender:
            self._send(link)

    def _send(self, sender: Link) -> None:
        if not self.started:
            self.started = time.monotonic()
        in_flight = self.sent - self.result.accepted - self.result.refused
        while sender.credit > 0 and self.sent < self.result.messages and in_flight < self.window:
            sender.delivery(str(self.sent))
            sender.stream(MESSAGE)
            sender.advance()
            self.sent += 1
            in_flight += 1

    def on_delivery(self, event: Event) -> None:
        delivery = event.delivery
        assert delivery is not None
        link = delivery.link
        if link.is_sender:
            if delivery.remote_state == Delivery.ACCEPTED:
                self.result.accepted += 1
            else:
                self.result.refused += 1
            delivery.settle()
            assert isinstance(link, Sender)
            self._send(link)
        elif delivery.readable and not delivery.partial:
            link.recv(delivery.pending)
            link.advance()
            self.result.received += 1
            self.unsettled_received.append(delivery)
            if len(self.unsettled_received) >= self.ack_batch:
                self._accept()
            self.credit_spent += 1
            if self.credit_spent * 2 >= self.credit:
                link.flow(self.credit_spent)
                self.credit_spent = 0
        if self._done():
            self._finish()

    def _accept(self) -> None:
        for delivery in self.unsettled_received:
            delivery.update(Delivery.ACCEPTED)
            delivery.settle()
        self.unsettled_received.clear()

    def _done(self) -> bool:
        outcomes = self.result.accepted + self.result.refused
        if self.result.scenario == "publish":
            return outcomes >= self.result.messages
        return outcomes >= self.result.messages and self.result.received >= self.result.messages

    def _finish(self) -> None:
        if self.result.seconds:
            return
        self.result.seconds = time.monotonic() - self.started if self.started else 0.0
        if self.timer is not None:
            self.timer.cancel()
        self._accept()
        self.result.moved = self.result.received if self.result.scenario == "pubsub" else self.result.accepted
        for connection in self.connections:
            connection.close()  # type: ignore[attr-defined]

    def on_transport_error(self, event: Event) -> None:
        condition = event.transport.condition if event.transport is not None else None
        self.result.error = self.result.error or f"transport: {condition}"
        self._finish()

    def on_connection_error(self, event: Event) -> None:
        connection = event.connection
        condition = connection.remote_condition if connection is not None else None
        self.result.error = self.result.error or f"connection: {condition}"
        self._finish()

    def on_link_error(self, event: Event) -> None:
        link = event.link
        self.result.error = self.result.error or f"link: {link.remote_condition if link else None}"
        self._finish()


def run_load(
    url: str,
    queue: str,
    scenario: str,
    messages: int,
    window: int = 1000,
    credit: int = 1000,
    ack_batch: int = 100,
    timeout_s: float = 120.0,
) -> LoadResult:
    """Run ``scenario`` once; returns when every message has its outcome (and delivery), or on an error."""
    generator = LoadGenerator(url, queue, scenario, messages, window, credit, ack_batch, timeout_s)
    Container(generator).run()
    return generator.result
