"""The shape of a route-table entry and the request helpers every resource shares (JSON bodies, booleans)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from broker.core.topology.vhost import VirtualHost
from broker.management.api.auth import Gate
from broker.management.context import ManagementContext
from broker.management.errors import ApiError, bad_request, key_missing, not_found
from protocol.errors import AMQPError, ReplyCode

Handler = Callable[[web.Request, ManagementContext], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    handler: Handler
    gate: Gate = Gate.MANAGEMENT


async def body_json(request: web.Request, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request's JSON object (rabbit_mgmt_util:decode): an empty, "null" or "undefined" body is {};
    anything unparsable is 400 not_json before anything is changed; missing mandatory keys are 400
    key_missing."""
    raw = (await request.read()).strip()
    if raw in (b"", b"null", b"undefined"):
        body: Any = {}
    else:
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise bad_request("not_json") from None
    if isinstance(body, bool) or body is None:
        body = {}
    if isinstance(body, str):
        raise bad_request(
            "invalid payload: the request body JSON-decoded to a string. Is the input doubly-JSON-encoded?"
        )
    if not isinstance(body, dict):
        raise bad_request("not_json")
    missing = [key for key in required if key not in body]
    if missing:
        raise key_missing(missing)
    return body


def flag(value: Any, default: bool = False) -> bool:
    """A boolean as rabbit_mgmt_util:parse_bool takes it: true/false or their text; anything else is 400
    ``["not_boolean", value]``."""
    if value is None:
        return default
    if value is True or value == "true":
        return True
    if value is False or value == "false":
        return False
    raise bad_request(["not_boolean", value])


def query_flag(request: web.Request, name: str) -> bool:
    """A query-string switch such as ``if-unused=true`` (anything but "true" is false)."""
    return request.query.get(name) == "true"


def amqp_error(error: AMQPError) -> ApiError:
    """What the API answers when the broker refuses an operation (rabbit_mgmt_util:with_channel)."""
    if error.code == ReplyCode.NOT_FOUND:
        return ApiError(404, "not_found", error.text)
    if error.code == ReplyCode.ACCESS_REFUSED:
        return ApiError(401, "not_authorised", "Access refused.")
    return bad_request(error.text)


@contextmanager
def refusals_answered() -> Iterator[None]:
    """Run a broker operation the API performs; its refusal (AMQPError) becomes the HTTP answer RabbitMQ
    gives for it (`amqp_error`: 404 not_found, 401 Access refused., else 400 with the reply text)."""
    try:
        yield
    except AMQPError as error:
        raise amqp_error(error) from None


def declared_vhost(context: ManagementContext, name: str) -> VirtualHost:
    """The vhost a PUT or POST declares into; a missing one is 404 ``vhost_not_found``, as
    rabbit_mgmt_util:with_vhost_and_props answers before it reads the body (a GET says Object Not Found)."""
    vhost = context.broker.vhosts.get(name)
    if vhost is None:
        raise ApiError(404, "not_found", "vhost_not_found")
    return vhost


def require(found: Any) -> Any:
    if found is None:
        raise not_found()
    return found
