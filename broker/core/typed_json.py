"""AMQP field tables as JSON that keeps their types, so captured headers replay exactly.

Headers-exchange matching is typed (integer 5 does not match string "5"), so plain JSON would change routing.
Each value is a ``[tag, payload]`` pair with the tags of `broker.core.arguments.freeze_value`: V void, t bool,
I integer, l integer typed long (`Long`), d double, S longstr, s longstr that is not UTF-8 (base64), x binary
(base64), D decimal (its text), T timestamp (ISO 8601), F table (list of [key, value]), A array. Used by the
journal to capture routing inputs and by the analytics replay to rebuild them; pure (stdlib and
broker.core.arguments) so Spark executors can import it.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from broker.core.arguments import Long


def encode_table(table: Mapping[str, Any] | None) -> str | None:
    if table is None:
        return None
    pairs = [[str(key), encode_value(value)] for key, value in table.items()]
    return json.dumps(pairs, separators=(",", ":"))


def decode_table(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    pairs = json.loads(text)
    if not isinstance(pairs, list):
        raise ValueError("a typed table is a JSON list of [key, value] pairs")
    return {str(key): decode_value(value) for key, value in pairs}


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
