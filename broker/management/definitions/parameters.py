"""The runtime-parameter sections of a definitions file: ``parameters`` (vhost-limits, operator_policy, policy
components), ``global_parameters``, ``policies``, and user limits, validated, applied and exported as
RabbitMQ 3.13 does (rabbit_definitions: parameters, then global parameters, then policies, all before the
queues and exchanges they apply to).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.core.broker import Broker
from broker.core.policies.policies import PolicyError, parse_policy
from broker.core.policies.runtime_parameters import USER_LIMITS, VHOST_LIMITS, ParameterError, check_limits

SECTIONS = ("parameters", "global_parameters", "policies")
_COMPONENTS = ("vhost-limits", "operator_policy", "policy")
_CLUSTER_ID = "internal_cluster_id"


class ParameterDefinitionsError(ValueError):
    """Raised with a message naming the item; the caller prefixes the file."""


def _items(data: Mapping[str, Any], section: str) -> list[Any]:
    items = data.get(section) or []
    if not isinstance(items, list):
        raise ParameterDefinitionsError(f"'{section}' must be a list, got {type(items).__name__}")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ParameterDefinitionsError(f"{section}[{index}] must be an object")
    return items


def validate(data: Mapping[str, Any], vhosts: set[str] | None) -> None:
    """Every parameter, global parameter and policy parses; ``vhosts`` are those the file and the broker
    have (None: not checked, when no broker is at hand yet)."""
    for index, item in enumerate(_items(data, "policies")):
        _policy(item, f"policies[{index}]", vhosts, "policy")
    for index, item in enumerate(_items(data, "parameters")):
        component = item.get("component")
        where = f"parameters[{index}] ('{item.get('name', '')}')"
        if component not in _COMPONENTS:
            raise ParameterDefinitionsError(f"{where}: component {component} is not supported by WarrenMQ")
        if component == "vhost-limits":
            _vhost(item, where, vhosts)
            value = item.get("value")
            try:
                check_limits(
                    value if isinstance(value, dict) else {}, ("max-connections", "max-queues"), "limits"
                )
            except ParameterError as error:
                raise ParameterDefinitionsError(f"{where}: {error.reason}") from None
        else:
            value = item.get("value") if isinstance(item.get("value"), dict) else {}
            _policy({**value, "vhost": item.get("vhost"), "name": item.get("name")}, where, vhosts, component)
    for index, item in enumerate(_items(data, "global_parameters")):
        if not isinstance(item.get("name"), str) or "value" not in item:
            raise ParameterDefinitionsError(f"global_parameters[{index}] needs 'name' and 'value'")
    for index, vhost in enumerate(_items(data, "vhosts")):
        limits = vhost.get("limits")
        if isinstance(limits, dict) and limits:
            try:
                check_limits(limits, VHOST_LIMITS, "limits")
            except ParameterError as error:
                raise ParameterDefinitionsError(
                    f"vhosts[{index}] ('{vhost.get('name')}'): {error.reason}"
                ) from None
    for index, user in enumerate(_items(data, "users")):
        limits = user.get("limits")
        if limits:
            try:
                check_limits(limits if isinstance(limits, dict) else {}, USER_LIMITS, "user-limits")
            except ParameterError as error:
                raise ParameterDefinitionsError(
                    f"users[{index}] ('{user.get('name')}'): {error.reason}"
                ) from None


def _vhost(item: Mapping[str, Any], where: str, vhosts: set[str] | None) -> str:
    vhost = item.get("vhost")
    if not isinstance(vhost, str):
        raise ParameterDefinitionsError(f"{where} lacks required string field(s) vhost")
    if vhosts is not None and vhost not in vhosts:
        raise ParameterDefinitionsError(f"{where}: vhost '{vhost}' is not defined")
    return vhost


def _policy(item: Mapping[str, Any], where: str, vhosts: set[str] | None, component: str) -> Any:
    vhost = _vhost(item, where, vhosts)
    name = item.get("name")
    if not isinstance(name, str):
        raise ParameterDefinitionsError(f"{where} lacks required string field(s) name")
    try:
        return parse_policy(vhost, name, item, operator=component == "operator_policy")
    except PolicyError as error:
        raise ParameterDefinitionsError(f"{where} ('{name}'): {'; '.join(error.reasons)}") from None


def apply(broker: Broker, data: Mapping[str, Any]) -> None:
    """Apply the sections (after validate); vhosts and users already exist."""
    vhosts = set(broker.vhosts)
    for user in _items(data, "users"):
        limits = user.get("limits")
        if isinstance(limits, dict) and user.get("name") in broker.access.users:
            broker.set_user_limits(user["name"], check_limits(limits, USER_LIMITS, "user-limits"))
    for vhost in _items(data, "vhosts"):
        limits = vhost.get("limits")
        if isinstance(limits, dict) and limits:  # 3.13 exports a vhost's limits with the vhost too
            broker.set_vhost_limits(vhost["name"], limits)
    for index, item in enumerate(_items(data, "parameters")):
        component = item["component"]
        if component == "vhost-limits":
            broker.set_vhost_limits(
                item["vhost"], item.get("value") if isinstance(item.get("value"), dict) else {}
            )
        else:
            value = item.get("value") if isinstance(item.get("value"), dict) else {}
            policy = _policy({**value, "vhost": item["vhost"], "name": item["name"]}, f"parameters[{index}]",
                             vhosts, component)  # fmt: skip
            broker.put_policy(policy, operator=component == "operator_policy")
    for item in _items(data, "global_parameters"):
        if item["name"] != _CLUSTER_ID or _CLUSTER_ID not in broker.parameters.global_parameters:
            broker.set_global_parameter(item["name"], item["value"])
    for index, item in enumerate(_items(data, "policies")):
        broker.put_policy(_policy(item, f"policies[{index}]", vhosts, "policy"))


def export(broker: Broker) -> dict[str, list[dict[str, Any]]]:
    """The three sections as RabbitMQ 3.13 exports them (operator policies, vhost limits: parameters)."""
    parameters: list[dict[str, Any]] = []
    for vhost in sorted(broker.vhosts):
        limits = broker.parameters.vhost_limits.get(vhost)
        if limits is not None:
            parameters.append({"value": dict(limits) if limits else [], "vhost": vhost,
                               "component": "vhost-limits", "name": "limits"})  # fmt: skip
        for policy in broker.policies.listing(vhost, operator=True):
            value = {key: v for key, v in policy.as_json().items() if key not in ("vhost", "name")}
            parameters.append({"value": value, "vhost": vhost, "component": "operator_policy",
                               "name": policy.name})  # fmt: skip
    held = broker.parameters.global_parameters
    return {
        "parameters": parameters,
        "global_parameters": [{"name": name, "value": held[name]} for name in sorted(held)],
        "policies": [policy.as_json() for policy in broker.policies.listing()],
    }
