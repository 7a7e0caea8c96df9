"""Inspection for tests: queue depths, consumers and bindings, every message's history of fates, and waits
that end when the broker's state says so (no sleeps).

The `Inspector` lives on the broker's loop thread: it is an observer on the core's EventBus and its methods
must be called on that thread (`BrokerThread` and `VhostHandle` marshal calls from other threads). Waits are
event-driven: each event schedules one re-check of the pending conditions on the next loop turn, when the core
is consistent again, so a condition is never evaluated in the middle of a mutation.
"""

from __future__ import annotations

import asyncio
import select
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker.core.events.events import Fate, MessageEvent, Topology, TopologyEvent
from broker.core.topology.snapshot import (
    BindingInfo,
    ConsumerInfo,
    QueueInfo,
    binding_infos,
    consumer_infos,
    queue_info,
    queue_infos,
)

if TYPE_CHECKING:
    from broker.core.topology.vhost import VirtualHost
    from broker.server.server import Server

DEFAULT_TIMEOUT_S = 5.0


class WaitTimeout(AssertionError):
    """A wait helper's condition did not become true in time (an AssertionError, so pytest reports it)."""


@dataclass(frozen=True, slots=True)
class FateRecord:
    """One step in a message's life: ``queue`` is None for exchange-level fates (published, routed,
    returned)."""

    fate: Fate
    queue: str | None
    detail: dict[str, Any]


@dataclass(slots=True)
class MessageRecord:
    """A message as the broker saw it, with every fate in the order the broker acted."""

    id: int
    vhost: str
    exchange: str
    routing_key: str
    body: bytes
    headers: dict[str, Any] | None
    events: list[FateRecord] = field(default_factory=list)

    @property
    def queues(self) -> list[str]:
        """The queues routing reached."""
        for event in self.events:
            if event.fate is Fate.ROUTED:
                return list(event.detail.get("queues", ()))
        return sorted({event.queue for event in self.events if event.queue is not None})

    def fates(self, queue: str | None = None) -> list[str]:
        """Fate names in order: in ``queue`` only, or (None) every fate including the exchange-level ones."""
        return [event.fate.value for event in self.events if queue is None or event.queue == queue]

    def fate(self, queue: str | None = None) -> str | None:
        """The latest fate (in ``queue``), e.g. "acked", "requeued", "dead_lettered", "returned"."""
        fates = self.fates(queue)
        return fates[-1] if fates else None


class Inspector:
    """Records message fates and answers state questions for one broker; attach once, at start."""

    def __init__(self, server: Server, max_messages: int = 100_000) -> None:
        self.server = server
        self.broker = server.broker
        self.loop = server.loop
        self.max_messages = max_messages
        # Oldest first. An OrderedDict drops its oldest in O(1); a dict's `next(iter(...))` walks every slot
        # deleted before it, so past max_messages each new message cost a scan of all the evicted ones (a
        # 200,000-message test spent a quarter of its time there).
        self._messages: OrderedDict[int, MessageRecord] = OrderedDict()
        self._by_queue: dict[tuple[str, str], dict[int, None]] = {}
        self._by_exchange: dict[tuple[str, str], dict[int, None]] = {}
        self._acked: Counter[tuple[str, str]] = Counter()
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._check_scheduled = False
        self._detach = self.broker.events.attach(self)

    def close(self) -> None:
        self._detach()
        for _, future in self._waiters:
            if not future.done():
                future.cancel()

    # -- observer (called synchronously by the core; only records and schedules a re-check)

    def on_message(self, event: MessageEvent) -> None:
        record = self._messages.get(event.message_id)
        if record is None:
            message = event.message
            record = MessageRecord(
                event.message_id,
                event.vhost,
                message.exchange,
                message.routing_key,
                message.body,
                dict(message.headers) if message.headers else None,
            )
            self._messages[event.message_id] = record
            self._by_exchange.setdefault((event.vhost, message.exchange), {})[event.message_id] = None
            if len(self._messages) > self.max_messages:
                self._forget(*self._messages.popitem(last=False))
        record.events.append(FateRecord(event.fate, event.queue, dict(event.detail)))
        if event.fate is Fate.ROUTED:
            for name in event.detail.get("queues", ()):
                self._by_queue.setdefault((event.vhost, name), {})[event.message_id] = None
        elif event.queue is not None:
            self._by_queue.setdefault((event.vhost, event.queue), {})[event.message_id] = None
            if event.fate is Fate.ACKED:
                self._acked[(event.vhost, event.queue)] += 1
        self._poke()

    def _forget(self, message_id: int, record: MessageRecord) -> None:
        """An evicted message leaves the per-queue and per-exchange indexes too (they would grow without
        bound in a long test otherwise)."""
        _drop(self._by_exchange, (record.vhost, record.exchange), message_id)
        for step in record.events:
            names = step.detail.get("queues", ()) if step.fate is Fate.ROUTED else (step.queue,)
            for name in names:
                if name is not None:
                    _drop(self._by_queue, (record.vhost, name), message_id)

    def on_topology(self, event: TopologyEvent) -> None:
        if event.kind is Topology.QUEUE_DELETED:
            self._acked.pop((event.vhost, event.detail["queue"]), None)
        self._poke()

    def forget_vhost(self, vhost: str) -> None:
        """Drop the history of a deleted vhost (the per-test vhost fixture calls this)."""
        for key in [key for key in self._by_queue if key[0] == vhost]:
            del self._by_queue[key]
        for key in [key for key in self._by_exchange if key[0] == vhost]:
            del self._by_exchange[key]
        for key in [key for key in self._acked if key[0] == vhost]:
            del self._acked[key]
        for message_id in [mid for mid, record in self._messages.items() if record.vhost == vhost]:
            del self._messages[message_id]

    # -- state

    def _vhost(self, vhost: str) -> VirtualHost:
        found = self.broker.vhosts.get(vhost)
        if found is None:
            raise LookupError(f"no vhost '{vhost}'")
        return found

    def queue(self, name: str, vhost: str = "/") -> QueueInfo:
        """Depth (ready / unacked), consumer count and shape of one queue; LookupError when missing."""
        queue = self._vhost(vhost).queues.get(name)
        if queue is None:
            raise LookupError(f"no queue '{name}' in vhost '{vhost}'")
        return queue_info(queue)

    def queues(self, vhost: str = "/") -> list[QueueInfo]:
        return queue_infos(self._vhost(vhost))

    def consumers(self, queue: str, vhost: str = "/") -> list[ConsumerInfo]:
        found = self._vhost(vhost).queues.get(queue)
        return consumer_infos(found) if found is not None else []

    def bindings(self, vhost: str = "/", include_default: bool = False) -> list[BindingInfo]:
        return binding_infos(self._vhost(vhost), include_default)

    def history(
        self, vhost: str = "/", queue: str | None = None, exchange: str | None = None
    ) -> list[MessageRecord]:
        """Messages in publish order: those routed to ``queue``, or published to ``exchange``, or all."""
        if queue is not None:
            ids: Any = self._by_queue.get((vhost, queue), {})
        elif exchange is not None:
            ids = self._by_exchange.get((vhost, exchange), {})
        else:
            return [record for record in self._messages.values() if record.vhost == vhost]
        messages = self._messages
        return [messages[mid] for mid in ids if mid in messages]

    def acked_count(self, queue: str, vhost: str = "/") -> int:
        return self._acked[(vhost, queue)]

    # -- waits

    async def wait_until_acked(
        self, queue: str, count: int = 1, vhost: str = "/", timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        """Until at least ``count`` messages from ``queue`` were acked (basic.ack, or no-ack delivery)."""
        await self.wait_for(
            lambda: self._acked[(vhost, queue)] >= count,
            timeout,
            f"{count} ack(s) on queue '{queue}' in vhost '{vhost}' (have {self._acked[(vhost, queue)]})",
        )

    async def wait_for_consumers(
        self, queue: str, count: int = 1, vhost: str = "/", timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        """Until ``queue`` exists with at least ``count`` consumers (``count`` 0: until it has none)."""

        def ready() -> bool:
            found = self.broker.vhosts.get(vhost)
            target = found.queues.get(queue) if found is not None else None
            if target is None:
                return False
            have = len(target.consumers)
            return have == 0 if count == 0 else have >= count

        await self.wait_for(ready, timeout, f"{count} consumer(s) on queue '{queue}' in vhost '{vhost}'")

    async def wait_until_bound(
        self,
        exchange: str,
        queue: str,
        routing_key: str | None = None,
        vhost: str = "/",
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        """Until ``queue`` is bound to ``exchange`` (with ``routing_key`` when given)."""

        def bound() -> bool:
            found = self.broker.vhosts.get(vhost)
            if found is None:
                return False
            return any(
                binding.source.name == exchange
                and not binding.is_e2e
                and getattr(binding.destination, "name", None) == queue
                and (routing_key is None or binding.routing_key == routing_key)
                for binding in found.bindings
            )

        key = f" with key '{routing_key}'" if routing_key is not None else ""
        await self.wait_for(bound, timeout, f"queue '{queue}' bound to exchange '{exchange}'{key}")

    async def wait_for(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Until ``predicate()`` holds; it is re-checked on the loop after every broker event."""
        if predicate():
            return
        future: asyncio.Future[None] = self.loop.create_future()
        entry = (predicate, future)
        self._waiters.append(entry)
        try:
            async with asyncio.timeout(timeout):
                await future
        except TimeoutError:
            raise WaitTimeout(f"timed out after {timeout}s waiting for {what}") from None
        finally:
            self._waiters.remove(entry)

    def _poke(self) -> None:
        if self._waiters and not self._check_scheduled:
            self._check_scheduled = True
            self.loop.call_soon(self._check)

    def _check(self) -> None:
        self._check_scheduled = False
        for predicate, future in list(self._waiters):
            if not future.done() and predicate():
                future.set_result(None)

    # -- settle

    async def settle(self, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """Barrier: every byte clients have sent so far is read and processed, every resulting dispatch pass
        has run and every resulting frame was handed to the socket.

        "Sent" means handed to this host's TCP stack: bytes a client's kernel still holds back (Nagle's
        algorithm on a socket without TCP_NODELAY; pika and asyncio clients set it) have not been received.

        Quiet means: no socket the loop reads has unread input, the dispatcher has no pass scheduled (its
        `call_soon` batches re-arm while work remains) and no connection has frames waiting for its
        once-per-turn coalesced write. Any of those can create another, so quiet must hold on two
        consecutive loop turns.
        """
        quiet_turns = 0
        try:
            async with asyncio.timeout(timeout):
                while quiet_turns < 2:
                    await asyncio.sleep(0)
                    quiet_turns = quiet_turns + 1 if self._quiet() else 0
        except TimeoutError:
            raise WaitTimeout(f"timed out after {timeout}s waiting for the broker to settle") from None

    def _quiet(self) -> bool:
        if not self.broker.dispatcher.idle:
            return False
        writer = self.server.writer
        if writer is not None and writer.busy:
            return False  # confirms and tx.commit-ok wait for the store's commit
        readable: list[int] = []
        for protocol in self.server.connections:
            if protocol.pending_output:
                return False
            transport = protocol.transport
            if transport is None or transport.is_closing() or not transport.is_reading():
                continue
            sock = transport.get_extra_info("socket")
            if sock is not None:
                readable.append(sock.fileno())
        if readable:
            ready, _, _ = select.select(readable, [], [], 0)
            if ready:
                return False
        return True


def _drop(index: dict[tuple[str, str], dict[int, None]], key: tuple[str, str], message_id: int) -> None:
    ids = index.get(key)
    if ids is not None:
        ids.pop(message_id, None)
        if not ids:
            del index[key]
