"""The interface a session writes through; implemented by the server's asyncio protocol."""

from __future__ import annotations

from typing import Protocol


class Transport(Protocol):
    def write(self, data: bytes) -> None:
        """Queue bytes; the edge coalesces everything queued in one loop turn into one socket write."""
        ...

    def close(self, after_s: float | None = None) -> None:
        """Flush and close the socket, now or after ``after_s`` seconds (waiting for a close-ok)."""
        ...
