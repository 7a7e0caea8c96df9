"""Misbehaviour a test asked for (nacked or withheld publisher confirms, silent heartbeats), per vhost.

Sessions consult it only while one is installed (``ConnectionSession.faults`` is None otherwise), so the
feature costs one attribute check at each hook when unused. The testing ring installs and drives it.
"""

from __future__ import annotations

from typing import Protocol

ANY_VHOST = "*"


class ConfirmingChannel(Protocol):
    """A channel whose publisher confirms are withheld (a `ChannelSession`)."""

    def flush_confirms(self) -> None: ...


class SessionFaults:
    """Fault switches keyed by vhost name (``ANY_VHOST`` matches every vhost)."""

    def __init__(self) -> None:
        self.nack_confirms: dict[str, int] = {}
        self.hold_confirms: set[str] = set()
        # Channels whose confirms were withheld, with the vhost they were withheld on.
        self.held_channels: dict[ConfirmingChannel, str] = {}
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

    def holds(self, channel: ConfirmingChannel, vhost: str) -> bool:
        """True while confirms are withheld on ``vhost``; remembers the channel for `release`."""
        if vhost in self.hold_confirms or ANY_VHOST in self.hold_confirms:
            self.held_channels[channel] = vhost
            return True
        return False

    def release(self, vhost: str) -> list[ConfirmingChannel]:
        """Stop withholding confirms on ``vhost``; returns the channels whose confirms must now flush."""
        self.hold_confirms.discard(vhost)
        if vhost == ANY_VHOST:
            self.hold_confirms.clear()
        channels = [
            channel for channel, held_on in self.held_channels.items() if not self.holds_vhost(held_on)
        ]
        for channel in channels:
            del self.held_channels[channel]
        return channels

    def holds_vhost(self, vhost: str) -> bool:
        return vhost in self.hold_confirms or ANY_VHOST in self.hold_confirms

    def drops_heartbeats(self, vhost: str) -> bool:
        return vhost in self.silent_heartbeats or ANY_VHOST in self.silent_heartbeats
