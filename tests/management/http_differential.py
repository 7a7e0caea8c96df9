"""The HTTP differential harness: a step (method, path, body, user), sent to a private RabbitMQ node with the
management plugin and to WarrenMQ, and the differences in status, headers, key sets and values."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tests.conftest import BrokerProcess, start_broker_process
from tests.management.rabbitmq_management_node import ManagementNode

GUEST = ("guest", "guest")


@dataclass(frozen=True)
class Step:
    method: str
    path: str
    body: Any = None
    user: tuple[str, str] = GUEST
    values: tuple[str, ...] = ()  # top-level keys whose values must be equal ("*" = the whole body)
    headers: tuple[str, ...] = ()  # response headers that must be equal
    keys: bool = True  # RabbitMQ's key set must be a subset of ours
    raw: bytes | None = None
    extra: dict[str, str] = field(default_factory=dict)


def send(base: str, step: Step) -> requests.Response:
    data = step.raw if step.raw is not None else (json.dumps(step.body) if step.body is not None else None)
    return requests.request(
        step.method,
        base + step.path,
        data=data,
        auth=step.user,
        headers={"content-type": "application/json", **step.extra},
        timeout=10,
    )


def body_of(response: requests.Response) -> Any:
    return response.json() if response.content else None


def key_set(body: Any) -> set[str]:
    if isinstance(body, list):
        return set().union(*(set(item) for item in body if isinstance(item, dict))) if body else set()
    return set(body) if isinstance(body, dict) else set()


def differences(rabbit_base: str, warren_base: str, scenario: list[Step]) -> list[str]:
    """Run every step on both brokers, in order; what WarrenMQ answered differently."""
    found = []
    for step in scenario:
        rabbit, warren = send(rabbit_base, step), send(warren_base, step)
        where = f"{step.method} {step.path}"
        if rabbit.status_code != warren.status_code:
            status = f"{rabbit.status_code} != {warren.status_code}"
            found.append(f"{where}: status {status} ({warren.text[:200]})")
            continue
        for header in step.headers:
            theirs, ours = rabbit.headers.get(header), warren.headers.get(header)
            if theirs != ours:
                found.append(f"{where}: header {header} {theirs!r} != {ours!r}")
        expected, actual = body_of(rabbit), body_of(warren)
        if step.keys and (missing := key_set(expected) - key_set(actual)):
            found.append(f"{where}: keys missing {sorted(missing)}")
        if "*" in step.values and expected != actual:
            found.append(f"{where}: body {expected!r} != {actual!r}")
        for key in (k for k in step.values if k != "*"):
            both = isinstance(expected, dict) and isinstance(actual, dict)
            if both and expected.get(key) != actual.get(key):
                found.append(f"{where}: {key} {expected.get(key)!r} != {actual.get(key)!r}")
    return found


@dataclass
class Pair:
    node: ManagementNode
    warren: BrokerProcess

    @property
    def bases(self) -> tuple[str, str]:
        return self.node.http_url, f"http://127.0.0.1:{self.warren.management_port}"

    @property
    def amqp_ports(self) -> tuple[int, int]:
        return self.node.port, self.warren.port


def start_pair(base_dir: Path) -> Iterator[Pair]:
    """A fresh RabbitMQ node and a fresh in-memory WarrenMQ, stopped after use (a fixture's body)."""
    node = ManagementNode(base_dir)
    node.start()
    warren = start_broker_process("--data-dir", "none")
    try:
        yield Pair(node, warren)
    finally:
        warren.stop()
        node.stop()


def nested_key_sets(body: Any, path: str = "") -> dict[str, set[str]]:
    """Every object nested in ``body`` (the body itself excluded), by its path (``consumer_details[]
    .channel_details``; list items share their list's path), with the union of the keys found there."""
    found: dict[str, set[str]] = {}
    if isinstance(body, list):
        for item in body:
            for where, keys in nested_key_sets(item, f"{path}[]").items():
                found.setdefault(where, set()).update(keys)
    elif isinstance(body, dict):
        if path and path != "[]":
            found[path] = set(body)
        for key, value in body.items():
            for where, keys in nested_key_sets(value, f"{path}.{key}" if path else key).items():
                found.setdefault(where, set()).update(keys)
    return found


def nested_differences(
    where: str, expected: Any, actual: Any, skip: frozenset[str] = frozenset()
) -> list[str]:
    """Each nested object of RabbitMQ's answer that WarrenMQ's lacks, or has with fewer keys (``skip``: paths
    not compared, each with its reason where the caller names it)."""
    theirs, ours = nested_key_sets(expected), nested_key_sets(actual)
    found = []
    for path, keys in sorted(theirs.items()):
        if path in skip or any(path.startswith(prefix + ".") for prefix in skip):
            continue
        if path not in ours:
            found.append(f"{where}: no {path} object (RabbitMQ's keys {sorted(keys)})")
        elif missing := keys - ours[path]:
            found.append(f"{where}: {path} lacks {sorted(missing)}")
    return found
