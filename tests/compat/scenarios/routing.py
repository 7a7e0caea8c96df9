"""Routing by exchange type (direct, fanout, topic, headers): which queues each key or header set reaches."""

from __future__ import annotations

import json
from typing import Any

import pika
import pika.exceptions

from .kit import Ctx, Observation, bodies, scenario


@scenario
def direct_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "direct", "direct")
    queues = {"info": ctx.queue(ch), "error": ctx.queue(ch), "both": ctx.queue(ch)}
    ch.queue_bind(queues["info"], x, "info")
    ch.queue_bind(queues["error"], x, "error")
    for key in ("info", "error", ""):
        ch.queue_bind(queues["both"], x, key)
    for key in ("info", "error", "warning", "", "INFO", "info "):
        ch.basic_publish(x, key, f"[{key}]".encode())
    ch.basic_publish("", queues["info"], b"default-exchange")
    return {label: bodies(ch, q) for label, q in queues.items()}


@scenario
def fanout_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "fanout", "fanout")
    queues = [ctx.queue(ch) for _ in range(3)]
    for i, q in enumerate(queues):
        ch.queue_bind(q, x, f"k{i}")
    ch.queue_bind(queues[0], x, "again")  # bound twice: still one copy
    ch.basic_publish(x, "anything", b"1")
    ch.basic_publish(x, "", b"2")
    return [bodies(ch, q) for q in queues]


TOPIC_BINDINGS = [
    "a.b.c", "a.*.c", "*", "*.*", "#", "a.#", "#.a", "a.#.c", "#.#", "#.*", "*.#", "a.*.#", "#.b.#", "",
    "a..b", "a.", "a*",
]  # fmt: skip
TOPIC_KEYS = [
    "",
    "a",
    "a.b",
    "a.c",
    "a.b.c",
    "a.b.x.c",
    "x.y.a",
    "b",
    "a.b.c.d",
    "a..b",
    "a.",
    ".",
    "A.B",
    "a*",
]


@scenario
def topic_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "topic", "topic")
    queues = {}
    for pattern in TOPIC_BINDINGS:
        queues[pattern] = ctx.queue(ch)
        ch.queue_bind(queues[pattern], x, pattern)
    for key in TOPIC_KEYS:
        ch.basic_publish(x, key, key.encode() or b"<empty>")
    return {pattern: bodies(ch, q) for pattern, q in queues.items()}


HEADER_BINDINGS: list[dict[str, Any]] = [
    {"x-match": "all", "a": "1", "b": "2"},
    {"x-match": "any", "a": "1", "b": "2"},
    {"a": "1"},
    {"x-match": "all"},
    {"x-match": "any"},
    {"x-match": "all", "n": 5},
    {"x-match": "all", "s": "5"},
    {"x-match": "all", "t": True},
    {"x-match": "all", "a": "1", "x-ignored": "z"},
    {"x-match": "any", "x-only": "v"},
]
HEADER_MESSAGES: list[dict[str, Any] | None] = [
    None,
    {},
    {"a": "1"},
    {"a": "1", "b": "2"},
    {"a": "1", "b": "x"},
    {"b": "2", "z": "9"},
    {"n": 5},
    {"n": "5"},
    {"s": 5},
    {"s": "5"},
    {"t": True},
    {"t": False},
    {"x-only": "v"},
    {"a": "1", "x-extra": "y"},
]


@scenario
def headers_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "headers", "headers")
    queues = []
    for arguments in HEADER_BINDINGS:
        q = ctx.queue(ch)
        ch.queue_bind(q, x, "", arguments=arguments)
        queues.append(q)
    for index, headers in enumerate(HEADER_MESSAGES):
        ch.basic_publish(x, "", str(index).encode(), properties=pika.BasicProperties(headers=headers))
    return [
        [json.dumps(arguments, sort_keys=True), bodies(ch, q)]
        for arguments, q in zip(HEADER_BINDINGS, queues, strict=True)
    ]
