"""Validating a policy or operator policy body as RabbitMQ does (rabbit_policy:validate, rabbit_policies and
rabbit_mirror_queue_misc:validate_policy), with RabbitMQ's error texts (checked against 3.10.8's HTTP API;
apply-to takes 3.13's queue-type targets).

rabbit_parameter_validation:proplist checks priority, pattern, apply-to, definition and collects the errors
newest first, so several errors are reported definition first. Erlang terms in the texts are printed as
``~p`` prints them (`erlang_json_term`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from broker.core.model.arguments import erlang_float

APPLY_TO = ("all", "exchanges", "queues", "classic_queues", "quorum_queues", "streams")
_OVERFLOWS = ("drop-head", "reject-publish", "reject-publish-dlx")
_LEADER_LOCATORS = ("client-local", "random", "least-leaders", "balanced")
_MAX_AGE = re.compile(r"^(\d+)(Y|M|D|h|m|s)$")


class PolicyError(ValueError):
    """A refused policy; ``reasons`` are RabbitMQ's texts in the order RabbitMQ prints them."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons


def erlang_json_term(value: Any) -> str:
    """A JSON-decoded value as Erlang's ``~p`` prints its term (strings are binaries, null an atom)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return erlang_float(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'<<"{escaped}">>'
    if isinstance(value, list):
        return "[" + ",".join(erlang_json_term(v) for v in value) + "]"
    if isinstance(value, Mapping):
        inner = ",".join(f"{erlang_json_term(k)} => {erlang_json_term(v)}" for k, v in value.items())
        return "#{" + inner + "}"
    return repr(value)


def _nonneg(message: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else f"{erlang_json_term(value)} is not a valid {message}"

    return check


def _binary(message: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if isinstance(value, str) else f"{erlang_json_term(value)} is not a valid {message}"

    return check


def _one_of(values: tuple[str, ...], message: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in values else f"{erlang_json_term(value)} is not a valid {message}"

    return check


def _expires(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return None if ok else f"{erlang_json_term(value)} is not a valid queue expiry"


def _max_age(value: Any) -> str | None:
    ok = isinstance(value, str) and _MAX_AGE.match(value) is not None
    return None if ok else f"{erlang_json_term(value)} is not a valid max age"


# rabbit_policies:validate_policy0, one checker per key (3.13 keys; queue-mode accepted as a no-op).
_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "alternate-exchange": _binary("alternate exchange name"),
    "dead-letter-exchange": _binary("dead letter exchange name"),
    "dead-letter-routing-key": _binary("dead letter routing key"),
    "message-ttl": _nonneg("message TTL"),
    "expires": _expires,
    "max-length": _nonneg("maximum length"),
    "max-length-bytes": _nonneg("maximum length in bytes"),
    "max-in-memory-length": _nonneg("maximum memory in bytes"),
    "max-in-memory-bytes": _nonneg("maximum memory in bytes"),
    "queue-mode": _one_of(("default", "lazy"), "queue-mode value"),
    "overflow": _one_of(_OVERFLOWS, "overflow value"),
    "delivery-limit": _nonneg("delivery limit"),
    "max-age": _max_age,
    "stream-max-segment-size-bytes": _nonneg("segment size"),
    "queue-leader-locator": _one_of(_LEADER_LOCATORS, "queue leader locator value"),
    "initial-cluster-size": _nonneg("cluster size"),
    "queue-master-locator": _one_of(("min-masters", "client-local", "random"), "queue-master-locator value"),
    "queue-version": _one_of((1, 2), "classic queue version"),  # type: ignore[arg-type]
    "dead-letter-strategy": _one_of(("at-most-once", "at-least-once"), "dead letter strategy"),
}
# rabbit_policies registers only these as operator_policy_validator.
OPERATOR_KEYS = frozenset(
    {"expires", "message-ttl", "max-length", "max-length-bytes", "max-in-memory-length",
     "max-in-memory-bytes", "delivery-limit"}
)  # fmt: skip
_HA_KEYS = ("ha-mode", "ha-params", "ha-sync-mode", "ha-sync-batch-size", "ha-promote-on-shutdown",
            "ha-promote-on-failure")  # fmt: skip


def _validate_ha(terms: Mapping[str, Any]) -> str | None:
    """rabbit_mirror_queue_misc:validate_policy: classic mirroring keys (deprecated in 3.13, accepted);
    texts checked against RabbitMQ 3.10.8."""
    mode, params = terms.get("ha-mode"), terms.get("ha-params")
    if "ha-mode" not in terms:
        if any(key in terms for key in ("ha-params", "ha-sync-mode", "ha-promote-on-shutdown")):
            return "ha-mode must be specified to specify ha-params, ha-sync-mode or ha-promote-on-shutdown"
    elif mode == "all":
        if "ha-params" in terms:
            return 'ha-mode="all" does not take parameters'
    elif mode == "exactly":
        if "ha-params" not in terms:
            return 'ha-mode="exactly" takes an integer, none given'
        if not (isinstance(params, int) and not isinstance(params, bool) and params > 0):
            return f'ha-mode="exactly" takes an integer, {erlang_json_term(params)} given'
    elif mode == "nodes":
        if "ha-params" not in terms:
            return 'ha-mode="nodes" takes a list, none given'
        if not (isinstance(params, list) and params and all(isinstance(p, str) for p in params)):
            return f'ha-mode="nodes" takes a list of strings, {erlang_json_term(params)} given'
    else:
        return f"{erlang_json_term(mode)} is not a valid ha-mode value"
    for key, allowed in (
        ("ha-sync-mode", ("manual", "automatic")),
        ("ha-promote-on-shutdown", ("always", "when-synced")),
        ("ha-promote-on-failure", ("always", "when-synced")),
    ):
        if key in terms and terms[key] not in allowed:
            choices = " or ".join(f'"{a}"' for a in allowed)
            return f"{key} must be {choices}, got {erlang_json_term(terms[key])}"
    if "ha-sync-batch-size" in terms:
        size = terms["ha-sync-batch-size"]
        if not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
            return f"ha-sync-batch-size takes an integer greater than 0, {erlang_json_term(size)} given"
    return None


def validate_definition(definition: Any, operator: bool) -> str | None:
    """rabbit_policy:validation: the first error, or None. Keys are checked in sorted order (the JSON object
    reaches RabbitMQ as a map), unknown keys only once the known ones passed."""
    if not isinstance(definition, Mapping):
        if definition == []:
            return "no policy provided"
        return f"definition must be a dictionary: {erlang_json_term(definition)}"
    if not definition:
        return "no policy provided"
    items = sorted(definition.items())
    known = OPERATOR_KEYS if operator else frozenset(_CHECKS) | frozenset(_HA_KEYS)
    for key, value in items:
        if key in known and key in _CHECKS:
            error = _CHECKS[key](value)
            if error is not None:
                return error
    if not operator and any(key in _HA_KEYS for key, _ in items):
        error = _validate_ha(definition)
        if error is not None:
            return error
    unknown = [(key, value) for key, value in items if key not in known]
    if unknown:
        pairs = ",".join(f"{{{erlang_json_term(k)},{erlang_json_term(v)}}}" for k, v in unknown)
        return f"[{pairs}] are not recognised policy settings"
    return None


_REGEX_PREFIX = "pattern should be regular expression but is invalid: "


def _regex_error(pattern: str, error: re.error) -> str:
    """A Python regex error in PCRE's words where they differ ("(" gives {"missing )",1}), printed as
    Erlang's ~p prints the tuple: broken after its first element, aligned under it, when it would reach
    column 80 (checked against RabbitMQ 3.10.8)."""
    message, position = error.msg, error.pos or 0
    if message.startswith("missing ), unterminated subpattern"):
        message, position = "missing )", len(pattern)
    elif message.startswith("unterminated character set"):
        message, position = "missing terminating ] for character class", len(pattern)
    elif message.startswith("unbalanced parenthesis"):
        message = "unmatched parentheses"
    term = f'{{"{message}",{position}}}'
    if len(_REGEX_PREFIX) + len(term) >= 80:
        term = f'{{"{message}",\n{" " * (len(_REGEX_PREFIX) + 1)}{position}}}'
    return _REGEX_PREFIX + term


def compile_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise PolicyError([_regex_error(pattern, error)]) from None


def validate_policy_body(body: Mapping[str, Any], operator: bool) -> list[str]:
    """Every error of a policy body, in RabbitMQ's order (definition, apply-to, pattern, priority)."""
    errors: list[str] = []
    priority = body.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int | float):
        errors.append(f"priority should be a number, actually was {erlang_json_term(priority)}")
    pattern = body.get("pattern")
    if not isinstance(pattern, str):
        errors.append(f"pattern should be a binary but was {erlang_json_term(pattern)}")
    else:
        try:
            compile_pattern(pattern)
        except PolicyError as error:
            errors.extend(error.reasons)
    apply_to = body.get("apply-to", "all")
    if apply_to not in APPLY_TO:
        text = apply_to if isinstance(apply_to, str) else erlang_json_term(apply_to)
        errors.append(
            f"apply-to '{text}' unrecognised; should be one of: 'queues', 'classic_queues',  "
            "'quorum_queues', 'streams', 'exchanges', or 'all'"
        )
    definition_error = validate_definition(body.get("definition"), operator)
    if definition_error is not None:
        errors.append(definition_error)
    errors.reverse()
    return errors
