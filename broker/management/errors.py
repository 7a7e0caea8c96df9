"""RabbitMQ's management error shapes (rabbit_mgmt_util:halt_response): ``{"error": ..., "reason": ...}``, and
the JSON encoding every response uses (compact, as rabbit_json)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

JSON = "application/json"


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    if isinstance(value, tuple | frozenset | set):
        return list(value)
    return str(value)


def dumps(body: Any) -> str:
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_default)
    except RecursionError:
        # Queue and binding arguments and message headers nest as deep as a client sent them (RabbitMQ
        # accepts 10,000 levels); the json module gives up near 1,000, so such a body is written by a loop.
        return _dumps_iteratively(body)


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_default)


def _dumps_iteratively(body: Any) -> str:
    """The same text as `dumps`, built with an explicit stack: any depth costs heap, not the C stack."""
    out: list[str] = []
    # Work items: a value to write, or a literal piece of text (a separator or a closing bracket).
    stack: list[tuple[bool, Any]] = [(False, body)]
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
            continue
        if isinstance(item, tuple | frozenset | set):
            item = list(item)
        if isinstance(item, dict):
            out.append("{")
            stack.append((True, "}"))
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):
                key, value = entries[index]
                stack.append((False, value))
                key_text = _scalar(key if isinstance(key, str) else str(key))
                stack.append((True, ("," if index else "") + key_text + ":"))
        elif isinstance(item, list):
            out.append("[")
            stack.append((True, "]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append((False, item[index]))
                if index:
                    stack.append((True, ","))
        elif isinstance(item, str | int | float) or item is None:
            out.append(_scalar(item))
        else:
            stack.append((False, _default(item)))
    return "".join(out)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=dumps(body), content_type=JSON, charset="utf-8", headers=headers)


class ApiError(Exception):
    """Raised by a resource; the error middleware answers it as RabbitMQ does."""

    def __init__(self, status: int, error: str, reason: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status} {error}: {reason}")
        self.status = status
        self.error = error
        self.reason = reason
        self.headers = headers

    def response(self) -> web.Response:
        if not self.error:
            return web.Response(status=self.status, headers=self.headers)  # a bare challenge, as cowboy's
        return json_response({"error": self.error, "reason": self.reason}, self.status, self.headers)


def not_found() -> ApiError:
    return ApiError(404, "Object Not Found", "Not Found")


def bad_request(reason: Any) -> ApiError:
    return ApiError(400, "bad_request", reason)


def not_authorised(reason: str) -> ApiError:
    return ApiError(401, "not_authorised", reason)


def access_refused() -> ApiError:
    """What the API answers when the user's vhost permissions refuse the operation (an AMQP 403 inside)."""
    return not_authorised("Access refused.")


def key_missing(keys: list[str]) -> ApiError:
    """rabbit_mgmt_util:decode's reason for mandatory keys a body lacks, printed as the Erlang list."""
    return bad_request("[" + ",".join(f"{{key_missing,{key}}}" for key in keys) + "]")


def no_content(status: int = 204, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, headers=headers)
