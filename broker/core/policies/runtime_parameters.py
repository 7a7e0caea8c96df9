"""Vhost limits, user limit values and global parameters, as RabbitMQ keeps them (rabbit_vhost_limit,
rabbit_auth_backend_internal user limits, rabbit_runtime_parameters global parameters), with RabbitMQ's
validation texts (checked against 3.10.8). Pure.

A limit is an integer; a negative one means "no limit" (rabbit_vhost_limit:is_over_connection_limit).
Deleting a vhost's last limit one by one leaves an empty limits parameter, listed as ``[]`` (as RabbitMQ).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.core.policies.policy_validation import erlang_json_term

VHOST_LIMITS = ("max-connections", "max-queues")
USER_LIMITS = ("max-connections", "max-channels")


class ParameterError(ValueError):
    """A refused value; ``reason`` is RabbitMQ's text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_limits(limits: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> dict[str, int]:
    """rabbit_parameter_validation:proplist over the limit names: integers only, unknown names refused."""
    errors: list[str] = []
    for name in allowed:
        if name in limits:
            value = limits[name]
            if isinstance(value, bool) or not isinstance(value, int):
                errors.append(f"{name} should be a number, actually was {erlang_json_term(value)}")
    unknown = [(k, v) for k, v in limits.items() if k not in allowed]
    if unknown:
        pairs = ",".join(f"{{{erlang_json_term(k)},{erlang_json_term(v)}}}" for k, v in unknown)
        errors.insert(0, f"Unrecognised terms [{pairs}] in {what}")
    if errors:
        raise ParameterError("\n".join(errors))
    return {name: int(limits[name]) for name in limits}


def effective_limit(limits: Mapping[str, int] | None, name: str) -> int | None:
    """The limit in force: None when unset or negative (unlimited)."""
    if not limits:
        return None
    value = limits.get(name)
    return value if value is not None and value >= 0 else None


class RuntimeParameters:
    """Vhost limits and global parameters. Newest limit first, as RabbitMQ's proplist lists them."""

    def __init__(self) -> None:
        self.vhost_limits: dict[str, dict[str, int]] = {}
        self.global_parameters: dict[str, Any] = {}

    def set_vhost_limit(self, vhost: str, name: str, value: Any) -> None:
        checked = check_limits({name: value}, VHOST_LIMITS, "limits")
        current = self.vhost_limits.get(vhost, {})
        current.pop(name, None)
        self.vhost_limits[vhost] = {**checked, **current}

    def clear_vhost_limit(self, vhost: str, name: str) -> None:
        if vhost in self.vhost_limits:
            self.vhost_limits[vhost].pop(name, None)

    def set_vhost_limits(self, vhost: str, limits: Mapping[str, Any]) -> None:
        """The whole vhost-limits parameter at once (definitions, /api/parameters/vhost-limits)."""
        self.vhost_limits[vhost] = check_limits(limits, VHOST_LIMITS, "limits")

    def clear_vhost_limits(self, vhost: str) -> bool:
        return self.vhost_limits.pop(vhost, None) is not None

    def vhost_limit(self, vhost: str, name: str) -> int | None:
        return effective_limit(self.vhost_limits.get(vhost), name)

    def set_global(self, name: str, value: Any) -> None:
        self.global_parameters[name] = value

    def clear_global(self, name: str) -> bool:
        return self.global_parameters.pop(name, None) is not None
