"""Policies and operator policies: which one applies to a queue or exchange, and what it changes.

Pure. Follows rabbit_policy (3.13): a policy matches when its vhost is the entity's, its apply-to covers the
entity (``queues``/``all`` any queue, ``classic_queues``/``quorum_queues``/``streams`` one queue type,
``exchanges``/``all`` exchanges), its pattern matches the name unanchored (re:run) and, for queues, the queue
type supports every key of its definition (the type's ``unsupported_policies``). Of the matching policies
the highest priority wins; ties go to the first in name order (RabbitMQ lists parameters by key; checked on
3.10.8: of "Mid", "beta" and "zeta" at one priority "Mid" applies). The operator policy is chosen the same way
and merged key by key (`effective_definition`): for the numeric limits the smaller value wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

from broker.core.policies.policy_validation import PolicyError, compile_pattern, validate_policy_body
from broker.core.queues.queue_settings import CLASSIC, QUORUM, STREAM

EntityKind = Literal["queue", "exchange"]

# rabbit_policies:merge_policy_value: where policy and operator policy both set a key, the smaller wins.
_MIN_MERGED = frozenset(
    {"message-ttl", "max-length", "max-length-bytes", "max-in-memory-length", "max-in-memory-bytes",
     "expires", "delivery-limit"}
)  # fmt: skip
_STREAM_POLICIES = frozenset({"max-age", "stream-max-segment-size-bytes", "initial-cluster-size"})
_CLASSIC_ONLY = frozenset(
    {"max-priority", "queue-mode", "ha-mode", "ha-params", "ha-sync-mode", "ha-promote-on-shutdown",
     "ha-promote-on-failure", "queue-master-locator"}
)  # fmt: skip
# unsupported_policies in capabilities() of rabbit_classic/quorum/stream_queue (3.13).
UNSUPPORTED = {
    CLASSIC: _STREAM_POLICIES
    | {"delivery-limit", "dead-letter-strategy", "max-in-memory-length", "max-in-memory-bytes"},
    QUORUM: _CLASSIC_ONLY | _STREAM_POLICIES,
    STREAM: _CLASSIC_ONLY
    | {"message-ttl", "expires", "max-length", "max-in-memory-length", "max-in-memory-bytes",
       "overflow", "dead-letter-exchange", "dead-letter-routing-key", "delivery-limit",
       "dead-letter-strategy"},
}  # fmt: skip
_TYPE_TARGET = {CLASSIC: "classic_queues", QUORUM: "quorum_queues", STREAM: "streams"}


class Policy(NamedTuple):
    """One policy or operator policy as stored and listed (rabbit_policy:p/2). A NamedTuple, not a frozen
    dataclass: the dataclass's methods were compiled at every start."""

    vhost: str
    name: str
    pattern: str
    apply_to: str
    definition: dict[str, Any]
    priority: int | float
    regex: re.Pattern[str]  # compiled from ``pattern``: equal patterns compile to equal regexes

    def as_json(self) -> dict[str, Any]:
        """The object /api/policies lists and definitions export."""
        return {
            "vhost": self.vhost,
            "name": self.name,
            "pattern": self.pattern,
            "apply-to": self.apply_to,
            "definition": dict(self.definition),
            "priority": self.priority,
        }

    def matches(self, kind: EntityKind, name: str, queue_type: str = CLASSIC) -> bool:
        if kind == "exchange":
            if self.apply_to not in ("exchanges", "all"):
                return False
        else:
            if self.apply_to not in ("queues", "all", _TYPE_TARGET.get(queue_type)):
                return False
            unsupported = UNSUPPORTED.get(queue_type, frozenset())
            if any(key in unsupported for key in self.definition):
                return False
        return self.regex.search(name) is not None


def parse_policy(vhost: str, name: str, body: Mapping[str, Any], operator: bool = False) -> Policy:
    """A policy from its HTTP/definitions body; PolicyError with RabbitMQ's texts when invalid.

    ``priority`` defaults to 0 and ``apply-to`` to ``all`` (rabbit_policy:set/8)."""
    errors = validate_policy_body(body, operator)
    if errors:
        raise PolicyError(errors)
    pattern = body["pattern"]
    priority = body.get("priority", 0)
    return Policy(
        vhost=vhost,
        name=name,
        pattern=pattern,
        apply_to=body.get("apply-to", "all"),
        definition=dict(body["definition"]),
        priority=priority,
        regex=compile_pattern(pattern),
    )


def select(
    policies: Iterable[Policy], kind: EntityKind, name: str, queue_type: str = CLASSIC
) -> Policy | None:
    """The policy that applies: highest priority; ties to the first name in byte order."""
    best: Policy | None = None
    for policy in sorted(policies, key=lambda p: p.name.encode()):
        if (best is None or policy.priority > best.priority) and policy.matches(kind, name, queue_type):
            best = policy
    return best


def effective_definition(policy: Policy | None, operator: Policy | None) -> dict[str, Any] | None:
    """rabbit_policy:merge_operator_definitions: keys of both, the stricter (smaller) of numeric limits;
    None when neither applies. Keys come out sorted (lists:umerge of the two key lists)."""
    if policy is None and operator is None:
        return None
    mine = policy.definition if policy is not None else {}
    theirs = operator.definition if operator is not None else {}
    merged: dict[str, Any] = {}
    for key in sorted(set(mine) | set(theirs)):
        if key in mine and key in theirs:
            merged[key] = _merge_value(key, mine[key], theirs[key])
        else:
            merged[key] = mine[key] if key in mine else theirs[key]
    return merged


def _merge_value(key: str, value: Any, operator_value: Any) -> Any:
    if key in _MIN_MERGED:
        return min(value, operator_value)
    return operator_value


class PolicyTable:
    """The policies and operator policies of every vhost. ``version`` moves on each change."""

    def __init__(self) -> None:
        self.policies: dict[str, dict[str, Policy]] = {}
        self.operator_policies: dict[str, dict[str, Policy]] = {}
        self.version = 0

    def _table(self, operator: bool) -> dict[str, dict[str, Policy]]:
        return self.operator_policies if operator else self.policies

    def put(self, policy: Policy, operator: bool = False) -> None:
        self._table(operator).setdefault(policy.vhost, {})[policy.name] = policy
        self.version += 1

    def delete(self, vhost: str, name: str, operator: bool = False) -> Policy | None:
        removed = self._table(operator).get(vhost, {}).pop(name, None)
        if removed is not None:
            self.version += 1
        return removed

    def get(self, vhost: str, name: str, operator: bool = False) -> Policy | None:
        return self._table(operator).get(vhost, {}).get(name)

    def listing(self, vhost: str | None = None, operator: bool = False) -> list[Policy]:
        """As /api/policies lists them: priority ascending, ties by vhost then name (rabbit_policy's
        sort_by_priority over parameters listed by key; checked on 3.10.8)."""
        table = self._table(operator)
        vhosts = [vhost] if vhost is not None else list(table)
        found = [p for v in vhosts for p in table.get(v, {}).values()]
        found.sort(key=lambda p: (p.vhost.encode(), p.name.encode()))
        found.sort(key=lambda p: p.priority)
        return found

    def vhost_deleted(self, vhost: str) -> None:
        self.policies.pop(vhost, None)
        self.operator_policies.pop(vhost, None)
        self.version += 1

    def resolve(
        self, vhost: str, kind: EntityKind, name: str, queue_type: str = CLASSIC
    ) -> tuple[Policy | None, Policy | None]:
        """(policy, operator policy) applying to one entity."""
        return (
            select(self.policies.get(vhost, {}).values(), kind, name, queue_type),
            select(self.operator_policies.get(vhost, {}).values(), kind, name, queue_type),
        )


__all__ = ["Policy", "PolicyError", "PolicyTable", "effective_definition", "parse_policy", "select"]
