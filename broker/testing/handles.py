"""`VhostHandle`: one vhost of a `BrokerThread`, with its inspection, waits and faults callable from the
test's thread (each call is marshalled onto the broker's loop); ``aio`` has the waits for async tests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

from broker.core.topology.snapshot import BindingInfo, ConsumerInfo, QueueInfo
from broker.testing.faults import MANAGEMENT_CLOSE_TEXT, Faults
from broker.testing.inspect import DEFAULT_TIMEOUT_S, Inspector, MessageRecord

T = TypeVar("T")


class LoopTools(Protocol):
    """The broker's inspector and fault injector, used on its loop (an `EmbeddedBroker`)."""

    @property
    def inspector(self) -> Inspector: ...

    @property
    def faults(self) -> Faults: ...


class BrokerCalls(Protocol):
    """What a handle asks of the `BrokerThread` that made it: marshalled calls onto the broker's loop."""

    @property
    def embedded(self) -> LoopTools: ...

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    def url_for(self, vhost: str) -> str: ...

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def run(self, coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T: ...

    def run_async(self, coroutine: Callable[[], Coroutine[Any, Any, T]]) -> Awaitable[T]: ...

    def advance_clock(self, seconds: float) -> None: ...


class VhostHandle:
    """Inspection, waits and fault injection scoped to vhost ``name``; ``url`` connects to it."""

    def __init__(self, thread: BrokerCalls, name: str) -> None:
        self.thread = thread
        self.name = name
        self.url = thread.url_for(name)
        self.aio = AsyncWaits(self)

    def __repr__(self) -> str:
        return f"VhostHandle({self.name!r}, url={self.url!r})"

    @property
    def _inspector(self) -> Inspector:
        return self.thread.embedded.inspector

    @property
    def _faults(self) -> Faults:
        return self.thread.embedded.faults

    # -- state

    def queue(self, name: str) -> QueueInfo:
        """Ready/unacked depth, consumer count and shape of queue ``name`` (LookupError when missing)."""
        return self.thread.call(self._inspector.queue, name, self.name)

    def queues(self) -> list[QueueInfo]:
        return self.thread.call(self._inspector.queues, self.name)

    def consumers(self, queue: str) -> list[ConsumerInfo]:
        return self.thread.call(self._inspector.consumers, queue, self.name)

    def bindings(self, include_default: bool = False) -> list[BindingInfo]:
        return self.thread.call(self._inspector.bindings, self.name, include_default)

    def history(self, queue: str | None = None, exchange: str | None = None) -> list[MessageRecord]:
        """Messages routed to ``queue`` / published to ``exchange`` / (neither) all, each with its fates."""
        return self.thread.call(self._inspector.history, self.name, queue, exchange)

    # -- waits (block this thread; use ``aio`` from a coroutine)

    def wait_until_acked(self, queue: str, count: int = 1, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.thread.run(lambda: self._inspector.wait_until_acked(queue, count, self.name, timeout))

    def wait_for_consumers(self, queue: str, count: int = 1, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.thread.run(lambda: self._inspector.wait_for_consumers(queue, count, self.name, timeout))

    def wait_until_bound(
        self, exchange: str, queue: str, routing_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.thread.run(
            lambda: self._inspector.wait_until_bound(exchange, queue, routing_key, self.name, timeout)
        )

    def settle(self, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """Return once every frame clients sent so far was processed and its results written."""
        self.thread.run(lambda: self._inspector.settle(timeout))

    def advance_clock(self, seconds: float) -> None:
        """Move the broker's manual clock (the whole broker's: every vhost sees the same time)."""
        self.thread.advance_clock(seconds)

    # -- faults

    def close_connections(self, text: str = MANAGEMENT_CLOSE_TEXT, name: str | None = None) -> int:
        """Close this vhost's connections with 320 CONNECTION_FORCED (``name``: only that one)."""
        return self.thread.call(self._faults.close_connections, self.name, text, name)

    def connection_names(self) -> list[str]:
        return self.thread.call(lambda: [p.name for p in self._faults.connections(self.name)])

    def channel_error(
        self, code: int = 406, text: str = "fault injected by WarrenMQ", channel_id: int | None = None
    ) -> int:
        return self.thread.call(self._faults.channel_error, self.name, code, text, channel_id)

    def block(self, reason: str = "low on memory") -> int:
        return self.thread.call(self._faults.block, self.name, reason)

    def unblock(self) -> int:
        return self.thread.call(self._faults.unblock, self.name)

    def nack_next_confirms(self, count: int = 1) -> None:
        self.thread.call(self._faults.nack_next_confirms, count, self.name)

    def hold_confirms(self, seconds: float | None = None) -> None:
        self.thread.call(self._faults.hold_confirms, self.name, seconds)

    def release_confirms(self) -> int:
        return self.thread.call(self._faults.release_confirms, self.name)

    def drop_heartbeats(self, drop: bool = True) -> None:
        self.thread.call(self._faults.drop_heartbeats, self.name, drop)

    def reset_faults(self) -> None:
        self.thread.call(self._faults.reset, self.name)


class AsyncWaits:
    """The waits of a `VhostHandle` for coroutines: they await without blocking the test's own loop."""

    def __init__(self, handle: VhostHandle) -> None:
        self._handle = handle

    async def wait_until_acked(self, queue: str, count: int = 1, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        handle = self._handle
        await handle.thread.run_async(
            lambda: handle._inspector.wait_until_acked(queue, count, handle.name, timeout)
        )

    async def wait_for_consumers(
        self, queue: str, count: int = 1, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        handle = self._handle
        await handle.thread.run_async(
            lambda: handle._inspector.wait_for_consumers(queue, count, handle.name, timeout)
        )

    async def wait_until_bound(
        self, exchange: str, queue: str, routing_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        handle = self._handle
        await handle.thread.run_async(
            lambda: handle._inspector.wait_until_bound(exchange, queue, routing_key, handle.name, timeout)
        )

    async def settle(self, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        handle = self._handle
        await handle.thread.run_async(lambda: handle._inspector.settle(timeout))
