"""Drive a ConnectionSession with client frames and read back what it wrote, with no sockets or event loop."""

from __future__ import annotations

from typing import Any, cast

from pamqp import commands, frame, header
from pamqp.base import Frame
from pamqp.body import ContentBody
from pamqp.common import FieldTable

from broker.core.broker import Broker
from broker.core.events.events import MessageEvent, TopologyEvent
from broker.session.config import SessionConfig
from broker.session.connection_session import ConnectionSession
from tests.unit.core.fakes import ManualLoop

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"


class FakeTransport:
    def __init__(self) -> None:
        self.buffer = bytearray()
        self.closed = False
        self.close_after: float | None = None

    def write(self, data: bytes) -> None:
        self.buffer += data

    def close(self, after_s: float | None = None) -> None:
        if after_s is None:
            self.closed = True
        else:
            self.close_after = after_s


class Client:
    """A scripted AMQP client: ``send`` frames, ``received()`` parses everything the broker wrote since."""

    def __init__(
        self,
        broker: Broker | None = None,
        config: SessionConfig | None = None,
        loop: ManualLoop | None = None,
        peer: str = "127.0.0.1:50000",
    ) -> None:
        self.loop = loop or ManualLoop()
        self.broker = broker or Broker(self.loop.call_soon)
        self.transport = FakeTransport()
        # ``peer`` as the server names it: guest may log in only from loopback (loopback_users).
        self.session = ConnectionSession(self.broker, config or SessionConfig(), self.transport, peer)

    def feed(self, data: bytes) -> None:
        self.session.data_received(data)
        self.loop.run()

    def send(self, channel: int, method: Frame | header.ContentHeader | ContentBody) -> None:
        self.feed(frame.marshal(method, channel))

    def received(self) -> list[tuple[int, Any]]:
        data = bytes(self.transport.buffer)
        self.transport.buffer.clear()
        frames = []
        while data:
            consumed, channel, value = frame.unmarshal(data)
            frames.append((channel, value))
            data = data[consumed:]
        return frames

    def handshake(self, capabilities: dict[str, Any] | None = None, frame_max: int = 131072) -> None:
        self.feed(PROTOCOL_HEADER)
        caps: dict[str, Any] = (
            capabilities if capabilities is not None else {"authentication_failure_close": True}
        )
        self.send(
            0,
            commands.Connection.StartOk(
                client_properties={"capabilities": cast("FieldTable", caps)},
                mechanism="PLAIN",
                response="\0guest\0guest",
            ),
        )
        channel_max = self.session.config.channel_max
        self.send(0, commands.Connection.TuneOk(channel_max=channel_max, frame_max=frame_max, heartbeat=0))
        self.frame_max = frame_max
        self.send(0, commands.Connection.Open(virtual_host="/"))
        self.received()

    def open_channel(self, channel: int = 1) -> None:
        self.send(channel, commands.Channel.Open())
        assert isinstance(self.received()[-1][1], commands.Channel.OpenOk)

    def publish(self, channel: int, body: bytes, routing_key: str, exchange: str = "", **props: Any) -> None:
        """All frames of the publish in one read, as clients write them (the native scanner groups them)."""
        frames = [
            frame.marshal(commands.Basic.Publish(exchange=exchange, routing_key=routing_key), channel),
            frame.marshal(header.ContentHeader(0, len(body), commands.Basic.Properties(**props)), channel),
        ]
        step = getattr(self, "frame_max", 131072) - 8
        for start in range(0, len(body), step):
            frames.append(frame.marshal(ContentBody(body[start : start + step]), channel))
        self.feed(b"".join(frames))


def close_of(frames: list[tuple[int, Any]]) -> tuple[int, int, str]:
    """(channel, reply_code, reply_text) of the last close frame the broker sent."""
    for channel, value in reversed(frames):
        if isinstance(value, commands.Connection.Close | commands.Channel.Close):
            return channel, int(value.reply_code or 0), str(value.reply_text)
    raise AssertionError(f"no close frame in {frames}")


class Recorder:
    """An event-bus observer that keeps every event, for assertions on fates and topology."""

    def __init__(self) -> None:
        self.messages: list[MessageEvent] = []
        self.topology: list[TopologyEvent] = []

    def on_message(self, event: MessageEvent) -> None:
        self.messages.append(event)

    def on_topology(self, event: TopologyEvent) -> None:
        self.topology.append(event)

    def fates(self) -> list[tuple[str, str | None]]:
        return [(event.fate.value, event.queue) for event in self.messages]
