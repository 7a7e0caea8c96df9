"""AMQP field tables as JSON that keeps their types, so captured headers replay exactly.

Headers-exchange matching is typed (integer 5 does not match string "5"), so plain JSON would change routing.
Each value is a ``[tag, payload]`` pair with the tags of `broker.core.model.arguments.freeze_value`: V void, t
bool, I integer, l integer typed long (`Long`), d double, S longstr, s longstr that is not UTF-8 (base64), x
binary (base64), D decimal (its text), T timestamp (ISO 8601), F table (list of [key, value]), A array. Used
by the journal to capture routing inputs and by the analytics replay to rebuild them; pure (stdlib and
broker.core.model.arguments) so Spark executors can import it.

RabbitMQ accepts tables nested thousands of levels deep (and the broker's decoder does too), but JSON text
nested that deep exceeds the json module's recursion limit (~1000 levels, ~330 table levels). A table nested
deeper than `NESTED_MAX_DEPTH` is therefore written flat: ``{"flat": [token, ...]}``, the values in prefix
order, a container as ``["F", n]`` / ``["A", n]`` followed by its n entries (a table entry: key, then value).
Both forms are read back; building and reading the flat form is iterative, so any depth costs heap only.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from broker.core.model.arguments import Long

# Tables nested deeper than this are written in the flat form (JSON's own limit is ~1000 array levels, and
# each table level costs three).
NESTED_MAX_DEPTH = 64


def encode_table(table: Mapping[str, Any] | None) -> str | None:
    if table is None:
        return None
    tokens, depth = _flatten(table)
    if depth > NESTED_MAX_DEPTH:
        return json.dumps({"flat": tokens}, separators=(",", ":"))
    pairs = [[str(key), encode_value(value)] for key, value in table.items()]
    return json.dumps(pairs, separators=(",", ":"))


def decode_table(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    pairs = json.loads(text)
    if isinstance(pairs, dict) and isinstance(pairs.get("flat"), list):
        return _unflatten(pairs["flat"])
    if not isinstance(pairs, list):
        raise ValueError("a typed table is a JSON list of [key, value] pairs")
    return {str(key): decode_value(value) for key, value in pairs}


def _flatten(table: Mapping[str, Any]) -> tuple[list[Any], int]:
    """The flat token list of ``table`` and its nesting depth, by an explicit stack (no recursion)."""
    tokens: list[Any] = [["F", len(table)]]
    # Each entry: an iterator over one container's remaining items, and whether it is a table.
    stack: list[tuple[Any, bool]] = [(iter(table.items()), True)]
    depth = 1
    while stack:
        items, is_table = stack[-1]
        item: Any = next(items, _END)
        if item is _END:
            stack.pop()
            continue
        value: Any = item
        if is_table:
            tokens.append(str(item[0]))
            value = item[1]
        if isinstance(value, Mapping):
            tokens.append(["F", len(value)])
            stack.append((iter(value.items()), True))
        elif isinstance(value, list | tuple):
            tokens.append(["A", len(value)])
            stack.append((iter(value), False))
        else:
            tokens.append(encode_value(value))
        depth = max(depth, len(stack))
    return tokens, depth


_END = object()


def _unflatten(tokens: list[Any]) -> dict[str, Any]:
    """The table a `_flatten` token list holds, rebuilt with an explicit stack."""
    position = 0

    def take() -> Any:
        nonlocal position
        if position >= len(tokens):
            raise ValueError("a flat typed table ends early")
        position += 1
        return tokens[position - 1]

    head = take()
    if not isinstance(head, list) or head[:1] != ["F"]:
        raise ValueError("a flat typed table starts with its table token")
    root: dict[str, Any] = {}
    # Each entry: the container being filled and how many entries it still expects.
    stack: list[list[Any]] = [[root, int(head[1])]]
    while stack:
        frame = stack[-1]
        container, remaining = frame
        if remaining == 0:
            stack.pop()
            continue
        frame[1] = remaining - 1
        key = str(take()) if isinstance(container, dict) else None
        token = take()
        value: Any
        if isinstance(token, list) and token[:1] in (["F"], ["A"]) and len(token) == 2:
            value = {} if token[0] == "F" else []
            stack.append([value, int(token[1])])
        else:
            value = decode_value(token)
        if key is not None:
            container[key] = value
        else:
            container.append(value)
    if position != len(tokens):
        raise ValueError("a flat typed table has trailing tokens")
    return root


def encode_value(value: Any) -> list[Any]:
    if value is None:
        return ["V"]
    if isinstance(value, bool):
        return ["t", value]
    if isinstance(value, int):
        return ["l", int(value)] if type(value) is Long else ["I", value]
    if isinstance(value, float):
        return ["d", repr(value)] if math.isnan(value) or math.isinf(value) else ["d", value]
    if isinstance(value, str):
        return ["S", value]
    if isinstance(value, bytearray | memoryview):
        return ["x", base64.b64encode(bytes(value)).decode()]
    if isinstance(value, bytes):
        return ["s", base64.b64encode(value).decode()]
    if isinstance(value, Decimal):
        return ["D", str(value)]
    if isinstance(value, datetime.datetime):
        return ["T", value.isoformat()]
    if isinstance(value, Mapping):
        return ["F", [[str(k), encode_value(v)] for k, v in value.items()]]
    if isinstance(value, list | tuple):
        return ["A", [encode_value(v) for v in value]]
    return ["S", str(value)]


def decode_value(item: Any) -> Any:
    if not isinstance(item, list) or not item or not isinstance(item[0], str):
        raise ValueError(f"not a typed value: {item!r}")
    tag = item[0]
    payload: Any = item[1] if len(item) > 1 else None
    if tag == "V":
        return None
    if tag == "t":
        return bool(payload)
    if tag == "I":
        return int(payload)
    if tag == "l":
        return Long(payload)
    if tag == "d":
        return float(payload)
    if tag == "S":
        return str(payload)
    if tag == "x":
        return bytearray(base64.b64decode(payload))
    if tag == "s":
        return base64.b64decode(payload)
    if tag == "D":
        return Decimal(payload)
    if tag == "T":
        return datetime.datetime.fromisoformat(payload)
    if tag == "F":
        return {str(k): decode_value(v) for k, v in payload}
    if tag == "A":
        return [decode_value(v) for v in payload]
    raise ValueError(f"unknown typed-value tag {tag!r}")
