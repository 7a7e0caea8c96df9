"""rabbitmqctl's output for info-key listings, as RabbitMQ 3.10's CLI prints them: a banner line, then a
header row and tab-separated rows (``table``, the default; ``-q`` drops the banner, ``-s`` the header too,
``--no-table-headers`` the header); ``--formatter json`` one object per line inside ``[`` and ``]``;
``--formatter csv`` quoted cells. Values print as Erlang terms do in the table (``true``, ``[]``,
``[{"x-max-length",10}]``, tags as ``[administrator, monitoring]``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def erlang_term(value: Any) -> str:
    """A JSON value as the CLI prints the Erlang term (strings quoted inside containers)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "undefined"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "[" + ",".join(f"{{{json.dumps(k)},{erlang_term(v)}}}" for k, v in value.items()) + "]"
    if isinstance(value, list):
        return "[" + ",".join(erlang_term(v) for v in value) + "]"
    return str(value)


def cell(value: Any, plain_list: bool = False) -> str:
    if plain_list and isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return value
    return erlang_term(value)


def json_value(value: Any) -> Any:
    """Table arguments become [[key, type, value]] in the CLI's JSON, as AMQP tables do."""
    if isinstance(value, dict):
        return [[k, _amqp_type(v), json_value(v)] for k, v in value.items()]
    return value


def _amqp_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "signedint"
    if isinstance(value, float):
        return "double"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    return "longstr"


def render(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    formatter: str,
    headers: bool,
    json_columns: Sequence[str] = (),
) -> str:
    """The listing without the banner; ``json_columns`` keep their JSON shape (tags lists)."""
    if formatter == "json":
        lines = ["["]
        for index, row in enumerate(rows):
            obj = {c: (row.get(c) if c in json_columns else json_value(row.get(c))) for c in columns}
            lines.append(("," if index else "") + json.dumps(obj, separators=(",", ":")))
        lines.append("]")
        return "\n".join(lines)
    if formatter == "csv":
        out = ['"' + '","'.join(columns) + '"'] if headers else []
        out += [
            '"' + '","'.join(cell(row.get(c), c in json_columns).replace('"', '""') for c in columns) + '"'
            for row in rows
        ]
        return "\n".join(out)
    out = ["\t".join(columns)] if headers and rows else []
    out += ["\t".join(cell(row.get(c), c in json_columns) for c in columns) for row in rows]
    return "\n".join(out)
