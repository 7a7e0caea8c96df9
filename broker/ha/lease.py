"""The active node's view of its lease, on the node's own monotonic clock: when to renew and when it must
consider the lease gone. Pure (no I/O): the times come in as arguments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class LeaseTimer:
    """A lease of ``lease_s`` seconds granted by the database.

    The database's clock decides when a standby may take over (``lease_until < now()`` there); this node
    cannot read that clock, so it counts its lease from the moment it *sent* the statement that granted or
    renewed it: the grant happened after that moment, so the database's deadline is no earlier than the one
    counted here (clock rates being equal). The node therefore steps down no later than a successor can be
    elected, and it renews every third of the lease so that two renewals may fail before it has to."""

    lease_s: float
    sent_at: float | None = None  # when the last successful grant or renewal was sent (monotonic seconds)

    def granted(self, sent_at: float) -> None:
        """A grant or renewal sent at ``sent_at`` succeeded."""
        self.sent_at = sent_at

    def expires_at(self) -> float:
        """The local monotonic time at which the lease is gone unless renewed."""
        if self.sent_at is None:
            return float("-inf")
        return self.sent_at + self.lease_s

    def expired(self, now: float) -> bool:
        return now >= self.expires_at()

    def renew_at(self) -> float:
        """When to send the next renewal: a third of the lease after the last successful one."""
        if self.sent_at is None:
            return float("-inf")
        return self.sent_at + self.lease_s / 3

    def remaining_s(self, now: float) -> float:
        return max(0.0, self.expires_at() - now)
