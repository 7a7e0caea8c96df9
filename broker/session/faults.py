"""Misbehaviour a test asked for (nacked or withheld publisher confirms, silent heartbeats), per vhost.

Sessions consult it only while one is installed (``ConnectionSession.faults`` is None otherwise), so the
feature costs one attribute check at each hook when unused. The testing ring installs and drives it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.session.channel_session import ChannelSession

ANY_VHOST = "*"


class SessionFaults:
    """Fault switches keyed by vhost name (``ANY_VHOST`` matches every vhost)."""

    def __init__(self) -> None:
        self.nack_confirms: dict[str, int] = {}
        self.hold_confirms: set[str] = set()
        self.held_channels: dict[ChannelSession, None] = {}
        self.silent_heartbeats: set[str] = set()

    def take_nack(self, vhost: str) -> bool:
        """True when this publish's confirm must be a basic.nack (counts the fault down)."""
        for key in (vhost, ANY_VHOST):
            remaining = self.nack_confirms.get(key, 0)
            if remaining > 0:
                if remaining == 1:
                    del self.nack_confirms[key]
                else:
                    self.nack_confirms[key] = remaining - 1
                return True
        return False

    def holds(self, channel: ChannelSession, vhost: str) -> bool:
        """True while confirms are withheld on ``vhost``; remembers the channel for `release`."""
        if vhost in self.hold_confirms or ANY_VHOST in self.hold_confirms:
            self.held_channels[channel] = None
            return True
        return False

    def release(self, vhost: str) -> list[ChannelSession]:
        """Stop withholding confirms on ``vhost``; returns the channels whose confirms must now flush."""
        self.hold_confirms.discard(vhost)
        if vhost == ANY_VHOST:
            self.hold_confirms.clear()
        channels = [
            channel
            for channel in self.held_channels
            if channel.conn.vhost is not None and not self.holds_vhost(channel.conn.vhost.name)
        ]
        for channel in channels:
            del self.held_channels[channel]
        return channels

    def holds_vhost(self, vhost: str) -> bool:
        return vhost in self.hold_confirms or ANY_VHOST in self.hold_confirms

    def drops_heartbeats(self, vhost: str) -> bool:
        return vhost in self.silent_heartbeats or ANY_VHOST in self.silent_heartbeats
