"""A recording TCP proxy between an AMQP client and a broker: it forwards bytes unchanged both ways and
records every frame in the order it saw them, per connection.

The proxy runs its own asyncio loop in a daemon thread, so blocking clients (pika's BlockingConnection, the
raw client) drive it from the test thread. Connections are numbered in the order the proxy accepted them; the
scenarios open their connections one after another, so the numbering is the same on both brokers.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlparse, urlunparse

from .wire import Frame, Splitter

Direction = Literal["C", "S"]  # client to broker, broker to client
# connection.close and close-ok: after either, the broker closing the socket is the normal end (when it gives
# up waiting for a close-ok is timing: RabbitMQ 3 s after a frame error, 30 s after other errors).
CLOSING = (b"\x00\x0a\x00\x32", b"\x00\x0a\x00\x33")


class FrameSplitter(Protocol):
    """Cuts one direction of a connection into frames (wire.Splitter for 0-9-1, amqp10_wire's for 1.0)."""

    def feed(self, data: bytes) -> list[Frame]: ...

    def rest(self) -> Frame | None: ...


@dataclass(frozen=True)
class Event:
    """One frame in the order the proxy saw it; ``at`` is monotonic seconds (heartbeat spacing only)."""

    direction: Direction
    frame: Frame
    at: float
    phase: str = "scenario"  # what the scenario was doing when the proxy saw it (kit.tell_phase)


@dataclass
class Recording:
    """One proxied connection: its frames, and whether the broker closed the socket before any close-ok."""

    events: list[Event] = field(default_factory=list)
    broker_closed_early: bool = False
    closed: threading.Event = field(default_factory=threading.Event)
    close_ok_seen: bool = False
    client_ended: bool = False
    phase: str = "scenario"

    def add(self, direction: Direction, frames: list[Frame]) -> None:
        now = time.monotonic()
        for frame in frames:
            self.events.append(Event(direction, frame, now, self.phase))
            if frame.kind == 1 and frame.payload[:4] in CLOSING:
                self.close_ok_seen = True


class RecordingProxy:
    """``with RecordingProxy(broker_url) as proxy``: clients connect to ``proxy.url``; ``proxy.recordings``
    holds one ``Recording`` per accepted connection."""

    def __init__(self, upstream_url: str, splitter: Callable[[], FrameSplitter] = Splitter) -> None:
        parsed = urlparse(upstream_url)
        self._splitter = splitter
        self._upstream = parsed
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 5672
        self.recordings: list[Recording] = []
        self.phase = "scenario"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="recording-proxy")
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        """The upstream URL with the proxy's address (credentials and vhost kept)."""
        netloc = f"127.0.0.1:{self.port}"
        if self._upstream.username is not None:
            credentials = self._upstream.username
            if self._upstream.password is not None:
                credentials += f":{self._upstream.password}"
            netloc = f"{credentials}@{netloc}"
        return urlunparse(self._upstream._replace(netloc=netloc))

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def set_phase(self, phase: str) -> None:
        """kit.tell_phase's listener: frames recorded from now on carry ``phase``. A poll is synchronous
        request/answer rounds, all of which have passed the proxy by the time the scenario's poll returns;
        a connection accepted later starts in the current phase."""
        self.phase = phase
        for recording in self.recordings:
            recording.phase = phase

    def settle(self, timeout_s: float = 5.0) -> None:
        """Wait until every proxied connection has ended (both sockets closed), so the recordings are
        complete."""
        deadline = time.monotonic() + timeout_s
        for recording in list(self.recordings):
            recording.closed.wait(max(0.0, deadline - time.monotonic()))

    async def _start(self) -> asyncio.base_events.Server:
        return await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        recording = Recording(phase=self.phase)
        self.recordings.append(recording)
        try:
            broker_reader, broker_writer = await asyncio.open_connection(self._host, self._port)
        except OSError:
            client_writer.close()
            recording.closed.set()
            return
        upward = asyncio.ensure_future(
            self._pump(client_reader, broker_writer, recording, "C", self._splitter())
        )
        downward = asyncio.ensure_future(
            self._pump(broker_reader, client_writer, recording, "S", self._splitter())
        )
        self._tasks.update((upward, downward))
        try:
            await asyncio.gather(upward, downward, return_exceptions=True)
        finally:
            self._tasks.difference_update((upward, downward))
            recording.closed.set()

    @staticmethod
    async def _pump(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        recording: Recording,
        direction: Direction,
        splitter: FrameSplitter,
    ) -> None:
        try:
            while data := await reader.read(65536):
                recording.add(direction, splitter.feed(data))
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            rest = splitter.rest()
            if rest is not None:
                recording.add(direction, [rest])
            if direction == "C":
                recording.client_ended = True
            elif not recording.client_ended and not recording.close_ok_seen:
                recording.broker_closed_early = True
            # One side ended: end the other too, as a direct connection would see it.
            try:
                writer.close()
            except (ConnectionError, OSError, RuntimeError):
                pass
