"""What a connection's asyncio protocol, of either AMQP version, asks of the server that accepted it
(``broker.server.server.Server`` meets it). Typing only: nothing here runs per connection."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.config import ServerConfig
    from broker.core.broker import Broker
    from broker.core.model.clock import Clock
    from broker.server.flow_control import FlowControl


class ServerHost(Protocol):
    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def broker(self) -> Broker: ...

    @property
    def config(self) -> ServerConfig: ...

    @property
    def flow(self) -> FlowControl:
        """The resource alarms in effect (``broker.server.flow_control``)."""
        ...
