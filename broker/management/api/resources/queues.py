"""/api/queues: lists, GET/PUT/DELETE one (if-unused, if-empty), its bindings, DELETE contents (purge) and
POST get (ackmode ack_requeue_true/false, reject_requeue_true/false; encoding auto/base64; truncate)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.config.cookie import ACTING_USER
from broker.core.queues.queue import Queue
from broker.core.queues.queue_admin import basic_get
from broker.management.api.auth import Gate, current_user, visible_vhosts
from broker.management.api.get_fates import got_events
from broker.management.api.messages import message_json
from broker.management.api.paging import reply, reply_list, reply_page
from broker.management.api.routing import (
    Route,
    body_json,
    declared_vhost,
    flag,
    query_flag,
    refusals_answered,
)
from broker.management.context import ManagementContext
from broker.management.errors import access_refused, bad_request, json_response, no_content, not_found
from broker.management.stats import live
from broker.management.views.serialize import BINDING_SORT, vhost_bindings
from broker.management.views.serialize_live import consumer_json
from broker.management.views.serialize_stats import queue_row

_ACKMODES = ("ack_requeue_true", "ack_requeue_false", "reject_requeue_true", "reject_requeue_false")


def check(request: web.Request, context: ManagementContext, kind: str, name: str, permission: str) -> None:
    """The acting user's vhost permission, as the AMQP operation the API performs would check it."""
    user = current_user(request)
    vhost = request.match_info["vhost"]
    if user.name == ACTING_USER:
        return  # rabbitmqctl (the node cookie): CLI operations are not subject to vhost permissions
    if not context.broker.access.authorize(user.name, vhost, kind, name, permission):  # type: ignore[arg-type]
        raise access_refused()


def declare_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """A PUT body's ``arguments`` (absent or null: none); anything but an object is 400."""
    arguments = body.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise bad_request("arguments must be an object")
    return arguments


def check_new_with_target(
    request: web.Request, context: ManagementContext, kind: str, name: str, existed: bool, target: object
) -> None:
    """A declare's extra check for a new exchange with an alternate exchange or a new queue with a
    dead-letter exchange (``target``): read on the new entity, write on the target exchange."""
    if not existed and isinstance(target, str):
        check(request, context, kind, name, "read")
        check(request, context, "exchange", target, "write")


def _queue(request: web.Request, context: ManagementContext) -> Queue:
    queue = context.vhost(request.match_info["vhost"]).queues.get(request.match_info["name"])
    if queue is None:
        raise not_found()
    return queue


async def list_queues(request: web.Request, context: ManagementContext) -> web.Response:
    names = visible_vhosts(context, current_user(request))
    queues = [queue for name in names for queue in context.broker.vhosts[name].queues.values()]
    return await reply_page(request, queues, _identity, lambda queue: queue_row(context, queue))


async def list_vhost_queues(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = context.vhost(request.match_info["vhost"])
    queues = list(vhost.queues.values())
    return await reply_page(request, queues, _identity, lambda queue: queue_row(context, queue))


def queue_consumers(context: ManagementContext, queue: Queue) -> list[dict[str, Any]]:
    """The queue's consumers as /api/consumers lists them (consumer_json), channel_details included: each
    consumer is found on the channel that holds it, as rabbit_mgmt_db joins a consumer to its channel."""
    owners = {
        id(consumer): (protocol, number)
        for protocol in context.open_connections()
        for number, channel in live.channels(protocol)
        for consumer in live.channel_consumers(channel)
    }
    return [
        consumer_json(*owners[id(consumer)], consumer, context.node)
        for consumer in queue.consumers
        if id(consumer) in owners
    ]


def _identity(queue: Queue) -> tuple[str, str]:
    return queue.vhost, queue.name


async def get_queue(request: web.Request, context: ManagementContext) -> web.Response:
    queue = _queue(request, context)
    row: dict[str, Any] = queue_row(context, queue, request)
    row["consumer_details"] = queue_consumers(context, queue)
    row["deliveries"] = []
    row["incoming"] = []
    return reply(request, row)


async def put_queue(request: web.Request, context: ManagementContext) -> web.Response:
    vhost = declared_vhost(context, request.match_info["vhost"])
    name = request.match_info["name"]
    body = await body_json(request)
    arguments = declare_arguments(body)
    if len(name.encode()) > 255:
        # rabbit_mgmt_wm_queue's own check, with its text (trailing newline included).
        raise bad_request(f"queue should be less than 255 bytes, actually was {len(name.encode())}\n")
    check(request, context, "queue", name, "configure")
    existed = name in vhost.queues
    dead_letter_exchange = arguments.get("x-dead-letter-exchange")
    check_new_with_target(request, context, "queue", name, existed, dead_letter_exchange)
    with refusals_answered():
        vhost.declare_queue(
            name,
            owner=None,
            durable=flag(body.get("durable")),  # RabbitMQ: false unless given
            auto_delete=flag(body.get("auto_delete")),
            arguments=arguments,
        )
    return no_content(204 if existed else 201)


async def delete_queue(request: web.Request, context: ManagementContext) -> web.Response:
    queue = _queue(request, context)
    check(request, context, "queue", queue.name, "configure")
    with refusals_answered():
        context.vhost(queue.vhost).delete_queue(
            queue.name,
            owner=queue.exclusive_owner,
            if_unused=query_flag(request, "if-unused"),
            if_empty=query_flag(request, "if-empty"),
        )
    return no_content()


async def queue_bindings(request: web.Request, context: ManagementContext) -> web.Response:
    queue = _queue(request, context)
    rows = [
        row
        for row in vhost_bindings(context.vhost(queue.vhost))
        if row["destination_type"] == "queue" and row["destination"] == queue.name
    ]
    return reply_list(request, rows, BINDING_SORT, paginate=False)


async def purge_queue(request: web.Request, context: ManagementContext) -> web.Response:
    queue = _queue(request, context)
    check(request, context, "queue", queue.name, "read")
    with refusals_answered():
        context.vhost(queue.vhost).purge_queue(queue.name, queue.exclusive_owner)
    return no_content()


def _integer(value: Any) -> int:
    """rabbit_mgmt_util:parse_int: a JSON integer or its decimal text (rabbitmqadmin sends text)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise bad_request(f"{value!r} is not a non-negative integer")


async def get_messages(request: web.Request, context: ManagementContext) -> web.Response:
    queue = _queue(request, context)
    body = await body_json(request, ("count", "ackmode", "encoding"))
    count, ackmode, encoding = _integer(body["count"]), body["ackmode"], body["encoding"]
    truncate = _integer(body["truncate"]) if body.get("truncate") not in (None, "") else None
    if ackmode not in _ACKMODES:
        raise bad_request(f"Unknown ackmode: {ackmode}")
    if encoding not in ("auto", "base64"):
        raise bad_request(f"Unsupported encoding {encoding}")
    check(request, context, "queue", queue.name, "read")
    taken = []
    for _ in range(count):
        envelope = basic_get(queue)
        if envelope is None:
            break
        # message_count is what remains after each get, as basic.get-ok reports it.
        taken.append((envelope, envelope.redelivered, len(queue.ready) + len(queue.fresh)))
    rows = [
        message_json(envelope.message, redelivered, remaining, encoding, truncate)
        for envelope, redelivered, remaining in taken
    ]
    envelopes = [envelope for envelope, _, _ in taken]
    got_events(queue, envelopes, ackmode)
    if ackmode.endswith("requeue_true"):
        queue.requeue(envelopes)
    elif envelopes:
        if queue.store is not None:
            queue.store.messages_removed(queue, [e for e in envelopes if e.message.delivery_mode == 2])
        if ackmode == "reject_requeue_false":
            context.vhost(queue.vhost).dead_letter(queue, envelopes, "rejected")
    return json_response(rows)


ROUTES = [
    Route("GET", "/api/queues", list_queues),
    Route("GET", "/api/queues/{vhost}", list_vhost_queues, Gate.VHOST),
    Route("GET", "/api/queues/{vhost}/{name}", get_queue, Gate.VHOST),
    Route("PUT", "/api/queues/{vhost}/{name}", put_queue, Gate.VHOST),
    Route("DELETE", "/api/queues/{vhost}/{name}", delete_queue, Gate.VHOST),
    Route("GET", "/api/queues/{vhost}/{name}/bindings", queue_bindings, Gate.VHOST),
    Route("DELETE", "/api/queues/{vhost}/{name}/contents", purge_queue, Gate.VHOST),
    Route("POST", "/api/queues/{vhost}/{name}/get", get_messages, Gate.VHOST),
]
