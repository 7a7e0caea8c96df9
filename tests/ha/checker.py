"""The partition tests' checker: reads what the clients recorded (tests/ha/partition_client.py) and what the
nodes logged (tests/ha/netns_nodes.py), and says what went wrong.

- every confirmed message delivered at least once (no loss);
- no message delivered that was never published;
- every delivery of a message after its first flagged ``redelivered`` (AMQP 0-9-1 basic.deliver's
  redelivered bit: RabbitMQ sets it on every delivery after a requeue);
- at most one node serving at any moment: the intervals from a node's ``active`` log line (which carries its
  ``epoch``) to its first ``lease_lost``, ``deposed`` or ``shutting_down`` line (or its exit) never overlap,
  and the epochs only grow;
- failover times (from a cut to the first confirm of a message sent after it) and recovery times (from a
  heal to the first confirm of a message sent after it)."""

from __future__ import annotations

import bisect
import itertools
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+\+\d\d:\d\d) \[\w+\] <[^>]*> (\w+)(.*)$")
_ENDS_SERVING = ("lease_lost", "deposed", "shutting_down")


@dataclass
class ActiveSpell:
    node: str
    epoch: int
    start: float
    end: float


@dataclass
class History:
    sent: dict[int, float] = field(default_factory=dict)
    confirmed: dict[int, float] = field(default_factory=dict)  # id -> when its confirm arrived
    nacked: set[int] = field(default_factory=set)
    lost: set[int] = field(default_factory=set)  # connection lost before the confirm: unknown outcome
    deliveries: list[tuple[int, bool, float]] = field(default_factory=list)
    publisher_stopped: bool = False

    @classmethod
    def read(cls, path: Path) -> History:
        history = cls()
        for line in path.read_text().splitlines():
            try:
                op = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short when the client was stopped
            kind, t = op["op"], op["t"]
            if kind == "send":
                history.sent[op["id"]] = t
            elif kind == "ok":
                history.confirmed[op["id"]] = t
            elif kind == "nack":
                history.nacked.add(op["id"])
            elif kind == "lost":
                history.lost.add(op["id"])
            elif kind == "deliver":
                history.deliveries.append((op["id"], op["redelivered"], t))
            elif kind == "stopped":
                history.publisher_stopped = True
        return history

    def delivered(self) -> set[int]:
        return {message_id for message_id, _, _ in self.deliveries}

    def first_confirm_sent_after(self, moment: float) -> float | None:
        """When the first message sent after ``moment`` was confirmed (None: none was)."""
        confirms = sorted((self.sent[i], t) for i, t in self.confirmed.items() if i in self.sent)
        index = bisect.bisect_right(confirms, (moment, float("inf")))
        later = [t for _, t in confirms[index:]]
        return min(later) if later else None


def active_spells(log: Path, node: str) -> list[ActiveSpell]:
    """Each time the node was active: from its ``active`` line to the first line ending its service."""
    spells: list[ActiveSpell] = []
    current: ActiveSpell | None = None
    for line in log.read_text().splitlines():
        if line.startswith("--- exit "):
            if current is not None:
                current.end = float(line.split()[2])
                spells.append(current)
                current = None
            continue
        match = LOG_LINE.match(line)
        if match is None:
            continue
        moment = datetime.fromisoformat(match.group(1)).timestamp()
        event = match.group(2)
        if event == "active":
            epoch = re.search(r"\bepoch=(\d+)", match.group(3))
            assert epoch is not None, line
            current = ActiveSpell(node, int(epoch.group(1)), moment, float("inf"))
        elif event in _ENDS_SERVING and current is not None:
            current.end = moment
            spells.append(current)
            current = None
    if current is not None:
        spells.append(current)  # still active
    return spells


@dataclass
class Verdict:
    history: History
    spells: list[ActiveSpell]
    lost: list[int]
    phantom: list[int]
    unflagged: list[int]
    overlaps: list[tuple[ActiveSpell, ActiveSpell]]
    duplicates: int

    def problems(self) -> list[str]:
        out = []
        if self.lost:
            out.append(f"{len(self.lost)} confirmed messages never delivered, first {self.lost[:10]}")
        if self.phantom:
            out.append(f"{len(self.phantom)} delivered but never published: {self.phantom[:10]}")
        if self.unflagged:
            out.append(
                f"{len(self.unflagged)} repeated deliveries not flagged redelivered: {self.unflagged[:10]}"
            )
        if self.overlaps:
            out.append(f"two nodes active at once: {self.overlaps}")
        epochs = [spell.epoch for spell in self.spells]
        if epochs != sorted(set(epochs)):
            out.append(f"epochs not strictly increasing in time: {epochs}")
        return out


def check(history: History, logs: dict[str, Path]) -> Verdict:
    delivered = history.delivered()
    lost = sorted(set(history.confirmed) - delivered)
    phantom = sorted(delivered - set(history.sent))
    seen: set[int] = set()
    unflagged: list[int] = []
    duplicates = 0
    for message_id, redelivered, _ in history.deliveries:
        if message_id in seen:
            duplicates += 1
            if not redelivered:
                unflagged.append(message_id)
        seen.add(message_id)
    spells = sorted(
        (s for node, log in logs.items() for s in active_spells(log, node)), key=lambda s: s.start
    )
    overlaps = [(a, b) for a, b in itertools.pairwise(spells) if b.start < a.end]
    return Verdict(history, spells, lost, phantom, unflagged, overlaps, duplicates)
