"""Login attempt counters per protocol, as rabbit_core_metrics keeps them (auth_attempt_succeeded/failed) for
GET /api/auth/attempts/{node}: one dict increment per login, nothing on the publish path."""

from __future__ import annotations

from typing import Any


class AuthAttempts:
    # A plain class, not a dataclass: a dataclass's methods are compiled at every start.
    __slots__ = ("counts",)

    def __init__(self) -> None:
        # protocol ("amqp091", "http") -> [succeeded, failed]
        self.counts: dict[str, list[int]] = {}

    def record(self, protocol: str, succeeded: bool) -> None:
        pair = self.counts.setdefault(protocol, [0, 0])
        pair[0 if succeeded else 1] += 1

    def reset(self) -> None:
        """rabbit_core_metrics:reset_auth_attempt_metrics (DELETE /api/auth/attempts/{node})."""
        self.counts.clear()

    def rows(self) -> list[dict[str, Any]]:
        """rabbit_core_metrics:get_auth_attempts: one row per protocol that has seen a login."""
        return [
            {
                "protocol": protocol,
                "auth_attempts": ok + failed,
                "auth_attempts_failed": failed,
                "auth_attempts_succeeded": ok,
            }
            for protocol, (ok, failed) in sorted(self.counts.items())
        ]
