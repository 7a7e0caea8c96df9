"""Server-generated names: `amq.gen-…` queues and `amq.ctag-…` consumer tags, seedable for deterministic
tests.
"""

from __future__ import annotations

import base64
import random


class NameGenerator:
    """RabbitMQ's shape: a prefix and 22 URL-safe base64 characters of 16 random bytes (rabbit_guid)."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed) if seed is not None else random.SystemRandom()

    def reseed(self, seed: int) -> None:
        """Restart the sequence (per-test determinism: each test sees the same names whatever ran before)."""
        self._random = random.Random(seed)

    def guid(self) -> bytes:
        """16 random bytes, as rabbit_guid:gen() (the direct reply-to key is made of one)."""
        return self._random.getrandbits(128).to_bytes(16, "big")

    def _token(self) -> str:
        return base64.urlsafe_b64encode(self.guid()).decode().rstrip("=")

    def queue_name(self) -> str:
        return "amq.gen-" + self._token()

    def consumer_tag(self) -> str:
        return "amq.ctag-" + self._token()
