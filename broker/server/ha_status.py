"""This node's place in a high-availability pair (broker/ha elects; this is what the management plane,
Prometheus and the CLI channel read): its role, the epoch it was elected with, the lease length."""

from __future__ import annotations

from enum import Enum


class NodeRole(Enum):
    ACTIVE = "active"  # holds the lease, fences the store with its epoch, serves AMQP clients
    STANDBY = "standby"  # waits for the lease: no AMQP listener, health checks 503


class HAStatus:
    # A plain class, not a dataclass: a dataclass's methods are compiled at every start.
    __slots__ = ("epoch", "lease_s", "role")

    def __init__(self, lease_s: float, role: NodeRole = NodeRole.STANDBY, epoch: int | None = None) -> None:
        self.lease_s = lease_s
        self.role = role
        self.epoch = epoch  # the epoch this node was elected with (None while standby)

    @property
    def active(self) -> bool:
        return self.role is NodeRole.ACTIVE

    def fields(self) -> dict[str, object]:
        """What /api/nodes and /api/overview add for a node of a high-availability pair (WarrenMQ's keys,
        absent when HA is off, so a single node answers with RabbitMQ's key set)."""
        return {
            "ha_role": self.role.value,
            "ha_epoch": self.epoch,
            "ha_failovers": self.failovers,
            "ha_lease_s": self.lease_s,
        }

    @property
    def failovers(self) -> int:
        """Elections after the first on this store: each epoch past 1 is a node taking over from another
        (the count is the store's, so every node that has been active reports the same history)."""
        return max((self.epoch or 1) - 1, 0)
