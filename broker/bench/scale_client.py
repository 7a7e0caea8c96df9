"""A cheap AMQP client for holding tens of thousands of idle connections: one asyncio protocol per socket that
does the handshake from pre-encoded frames, then only answers heartbeats. Runs in a worker process (its own
file-descriptor table) and reports what it saw through a pipe.

Methods are recognised by their class and method ids alone; only Connection.Close is decoded (for its reply
text). Source addresses rotate over loopback aliases (127.0.0.x) so that no (source, destination) pair runs
out of ephemeral ports.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection as Pipe
from typing import Any, cast

from pamqp import commands

from protocol.codec import decode_method, encode_heartbeat, encode_method, make_method
from protocol.errors import FrameError
from protocol.framing import FRAME_HEARTBEAT, FRAME_METHOD, PROTOCOL_HEADER, FrameBuffer

_IDS = struct.Struct("!HH")
START = _IDS.pack(10, 10)
TUNE = _IDS.pack(10, 30)
OPEN_OK = _IDS.pack(10, 41)
CLOSE = _IDS.pack(10, 50)
CHANNEL_OPEN_OK = _IDS.pack(20, 11)
HEARTBEAT = encode_heartbeat()


@dataclass(frozen=True)
class Handshake:
    """The client's half of the handshake, encoded once for every connection."""

    start_ok: bytes
    tune_ok_open: bytes
    channel_open: bytes
    channels: int

    @classmethod
    def build(cls, username: str, password: str, vhost: str, heartbeat_s: int, channels: int) -> Handshake:
        start_ok = commands.Connection.StartOk(
            client_properties={"product": "warrenmq-scale"},
            mechanism="PLAIN",
            response=f"\0{username}\0{password}",
        )
        tune_ok = commands.Connection.TuneOk(channel_max=2047, frame_max=131072, heartbeat=heartbeat_s)
        open_ = commands.Connection.Open(virtual_host=vhost)
        return cls(
            start_ok=encode_method(0, start_ok),
            tune_ok_open=encode_method(0, tune_ok) + encode_method(0, open_),
            channel_open=b"".join(
                encode_method(number, make_method(commands.Channel.Open)) for number in range(1, channels + 1)
            ),
            channels=channels,
        )


class IdleConnection(asyncio.Protocol):
    """One client socket: handshake, then count heartbeats and note how (and whether) the broker closed it."""

    __slots__ = ("_pending", "buffer", "closed_by", "hand", "heartbeats", "opened", "ready", "transport")

    def __init__(self, hand: Handshake, ready: asyncio.Future[IdleConnection]) -> None:
        self.hand = hand
        self.ready = ready
        self.buffer = FrameBuffer(0, expect_protocol_header=False)
        self.transport: asyncio.Transport | None = None
        self.heartbeats = 0
        self.opened = False
        self.closed_by = ""  # "" while open; else what ended it (the broker's close text, "lost")
        self._pending = hand.channels  # channel.open-oks still awaited

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(PROTOCOL_HEADER)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.buffer.feed(data)
        except FrameError as error:
            self._end(f"bad frame: {error}")
            return
        for frame_type, _, payload in frames:
            if frame_type == FRAME_HEARTBEAT:
                self.heartbeats += 1
            elif frame_type == FRAME_METHOD:
                self._method(payload)

    def _method(self, payload: bytes) -> None:
        ids = payload[:4]
        transport = self.transport
        assert transport is not None
        if ids == START:
            transport.write(self.hand.start_ok)
        elif ids == TUNE:
            transport.write(self.hand.tune_ok_open)
        elif ids == OPEN_OK:
            if self._pending:
                transport.write(self.hand.channel_open)
            else:
                self._opened()
        elif ids == CHANNEL_OPEN_OK:
            self._pending -= 1
            if not self._pending:
                self._opened()
        elif ids == CLOSE:
            close = decode_method(payload)
            assert isinstance(close, commands.Connection.Close)
            transport.write(encode_method(0, commands.Connection.CloseOk()))
            self._end(f"{close.reply_code} {close.reply_text}")

    def _opened(self) -> None:
        self.opened = True
        if not self.ready.done():
            self.ready.set_result(self)

    def _end(self, reason: str) -> None:
        if not self.closed_by:
            self.closed_by = reason
        if not self.ready.done():
            self.ready.set_exception(ConnectionError(reason))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(f"lost: {exc!r}" if exc is not None else "lost")


@dataclass
class Plan:
    """What one worker opens: ``count`` connections to ``host:port``, from these source addresses in turn."""

    host: str
    port: int
    sources: list[str]
    count: int
    heartbeat_s: int
    username: str = "guest"
    password: str = "guest"
    vhost: str = "/"
    channels: int = 0
    concurrency: int = 200
    connect_timeout_s: float = 60.0
    extra: dict[str, Any] = field(default_factory=dict)


class Fleet:
    """The connections of one worker, and the single timer that sends every heartbeat (not one per socket)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.hand = Handshake.build(plan.username, plan.password, plan.vhost, plan.heartbeat_s, plan.channels)
        self.conns: list[IdleConnection] = []
        self.failures: dict[str, int] = {}
        self._beat: asyncio.TimerHandle | None = None

    async def open_all(self) -> float:
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        gate = asyncio.Semaphore(self.plan.concurrency)
        self._schedule_beat()  # the first connections must beat while the last ones are still opening

        async def one(index: int) -> None:
            async with gate:
                source = self.plan.sources[index % len(self.plan.sources)]
                try:
                    conn = await asyncio.wait_for(self._connect(loop, source), self.plan.connect_timeout_s)
                except (OSError, ConnectionError, TimeoutError) as error:
                    reason = type(error).__name__
                    if type(error) is ConnectionError:  # ours: how the broker ended it ("lost", a close)
                        reason += f" {str(error)[:40]}"
                    elif isinstance(error, OSError):
                        reason += f" {error.errno}"
                    self.failures[reason] = self.failures.get(reason, 0) + 1
                    return
                self.conns.append(conn)

        async with asyncio.TaskGroup() as group:
            for index in range(self.plan.count):
                group.create_task(one(index))
        return time.monotonic() - started

    async def _connect(self, loop: asyncio.AbstractEventLoop, source: str) -> IdleConnection:
        ready: asyncio.Future[IdleConnection] = loop.create_future()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.bind((source, 0))
            await loop.sock_connect(sock, (self.plan.host, self.plan.port))
        except BaseException:
            sock.close()
            raise
        transport, _ = await loop.create_connection(lambda: IdleConnection(self.hand, ready), sock=sock)
        try:
            return await ready
        except BaseException:
            transport.abort()
            raise

    def _schedule_beat(self) -> None:
        if self.plan.heartbeat_s:
            loop = asyncio.get_running_loop()
            self._beat = loop.call_later(self.plan.heartbeat_s / 2, self._send_heartbeats)

    def _send_heartbeats(self) -> None:
        for conn in self.conns:
            if not conn.closed_by and conn.transport is not None:
                conn.transport.write(HEARTBEAT)
        self._schedule_beat()

    def snapshot(self) -> dict[str, Any]:
        """Open and closed counts, why connections ended, and the heartbeats each has received so far."""
        beats = sorted(conn.heartbeats for conn in self.conns)
        ended: dict[str, int] = {}
        for conn in self.conns:
            if conn.closed_by:
                ended[conn.closed_by] = ended.get(conn.closed_by, 0) + 1
        return {
            "opened": len(self.conns),
            "open": sum(1 for conn in self.conns if not conn.closed_by),
            "failed": dict(self.failures),
            "ended": ended,
            "heartbeats_min": beats[0] if beats else 0,
            "heartbeats_max": beats[-1] if beats else 0,
            "heartbeats": sum(beats),
        }

    def close_all(self) -> None:
        if self._beat is not None:
            self._beat.cancel()
        for conn in self.conns:
            if conn.transport is not None:
                conn.transport.abort()


async def _serve(plan: Plan, pipe: Pipe) -> None:
    """Open, report, then answer the parent's commands ("snapshot", "reset", "close") until "close"."""
    loop = asyncio.get_running_loop()
    fleet = Fleet(plan)
    seconds = await fleet.open_all()
    pipe.send({"open_s": seconds, **fleet.snapshot()})
    while True:
        command = await loop.run_in_executor(None, pipe.recv)
        if command == "reset":  # count heartbeats from now on
            for conn in fleet.conns:
                conn.heartbeats = 0
            pipe.send(fleet.snapshot())
        elif command == "snapshot":
            pipe.send(fleet.snapshot())
        else:
            fleet.close_all()
            await asyncio.sleep(0)
            pipe.send({"closed": True})
            return


def worker(plan: Plan, pipe: Pipe) -> None:
    """Entry point of a client process."""
    try:
        import uvloop

        uvloop.run(_serve(plan, pipe))
    except ImportError:  # pragma: no cover - platforms without uvloop
        asyncio.run(_serve(plan, pipe))
