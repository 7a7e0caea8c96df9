"""A component client on a broker with a ManualClock, and short helpers for the queue-feature tests."""

from __future__ import annotations

from typing import Any

from pamqp import commands

from broker.core.broker import Broker
from broker.core.model.clock import ManualClock
from broker.core.model.profile import DEFAULT_PROFILE, Profile
from broker.session.config import SessionConfig
from tests.component.harness import Client
from tests.unit.core.fakes import ManualLoop


class TimedClient(Client):
    """A handshaken client with channel 1 open; ``advance`` moves the broker's clock and runs the loop."""

    def __init__(self, profile: Profile = DEFAULT_PROFILE, config: SessionConfig | None = None) -> None:
        loop = ManualLoop()
        self.clock = ManualClock()
        super().__init__(Broker(loop.call_soon, clock=self.clock, profile=profile), config=config, loop=loop)
        self.handshake()
        self.open_channel(1)

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.loop.run()

    def declare(self, queue: str, **arguments: Any) -> commands.Queue.DeclareOk:
        durable = bool(arguments.pop("durable", False))
        self.send(1, commands.Queue.Declare(queue=queue, durable=durable, arguments=arguments))
        ok: commands.Queue.DeclareOk = self.expect(commands.Queue.DeclareOk)
        return ok

    def count(self, queue: str) -> int:
        self.send(1, commands.Queue.Declare(queue=queue, passive=True))
        return int(self.expect(commands.Queue.DeclareOk).message_count)

    def expect(self, kind: type) -> Any:
        frames = self.received()
        found = [value for _, value in frames if isinstance(value, kind)]
        assert found, f"no {kind.__name__} in {frames}"
        return found[-1]

    def get(self, queue: str, channel: int = 1, no_ack: bool = True) -> tuple[Any, Any, bytes] | None:
        """(get-ok, properties, body) or None for get-empty."""
        self.send(channel, commands.Basic.Get(queue=queue, no_ack=no_ack))
        frames = [value for _, value in self.received()]
        if any(isinstance(value, commands.Basic.GetEmpty) for value in frames):
            return None
        return message_of(frames, commands.Basic.GetOk)

    def bodies(self, queue: str) -> list[bytes]:
        out = []
        while (got := self.get(queue)) is not None:
            out.append(got[2])
        return out

    def deliveries(self) -> list[tuple[Any, Any, bytes]]:
        """(basic.deliver, properties, body) for each delivery written since the last read."""
        frames = [value for _, value in self.received()]
        out = []
        for index, value in enumerate(frames):
            if isinstance(value, commands.Basic.Deliver):
                out.append(message_of(frames[index:], commands.Basic.Deliver))
        return out


def message_of(frames: list[Any], kind: type) -> tuple[Any, Any, bytes]:
    for index, value in enumerate(frames):
        if isinstance(value, kind):
            header = frames[index + 1]
            body = b"".join(
                bytes(frame.value) for frame in frames[index + 2 :] if type(frame).__name__ == "ContentBody"
            )[: header.body_size]
            return value, header.properties, body
    raise AssertionError(f"no {kind.__name__} in {frames}")
