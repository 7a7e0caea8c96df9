"""Real pika traffic through a broker with the journal on (full mode, routing captured), and the two
definitions files replay compares: what several suites analyse."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pika

from tests.conftest import start_broker_process


def definitions(eu_binding: bool, plain_ae: bool) -> dict[str, Any]:
    """The topology the test declares (A), or the candidate with eu.# removed and an AE on plain (B)."""

    def ex(name: str, kind: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": name,
            "vhost": "/",
            "type": kind,
            "durable": False,
            "auto_delete": False,
            "internal": False,
            "arguments": args,
        }

    def bind(source: str, queue: str, key: str) -> dict[str, Any]:
        return {
            "source": source,
            "vhost": "/",
            "destination": queue,
            "destination_type": "queue",
            "routing_key": key,
            "arguments": {},
        }

    bindings = [bind("orders", "all", "#"), bind("orders.ae", "lost", "")]
    if eu_binding:
        bindings.append(bind("orders", "eu", "eu.#"))
    return {
        "vhosts": [{"name": "/"}],
        "exchanges": [
            ex("orders", "topic", {"alternate-exchange": "orders.ae"}),
            ex("orders.ae", "fanout", {}),
            ex("plain", "direct", {"alternate-exchange": "orders.ae"} if plain_ae else {}),
        ],
        "queues": [
            {"name": q, "vhost": "/", "durable": False, "auto_delete": False, "arguments": {}}
            for q in ("eu", "all", "lost")
        ],
        "bindings": bindings,
    }


def send_traffic(url: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.confirm_delivery()
    for queue in ("eu", "all", "lost"):
        channel.queue_declare(queue)
    channel.exchange_declare("orders.ae", "fanout")
    channel.exchange_declare("orders", "topic", arguments={"alternate-exchange": "orders.ae"})
    channel.exchange_declare("plain", "direct")
    channel.queue_bind("all", "orders", "#")
    channel.queue_bind("eu", "orders", "eu.#")
    channel.queue_bind("lost", "orders.ae", "")
    for i in range(20):
        channel.basic_publish("orders", "eu.order", b"x" * 10, pika.BasicProperties(headers={"i": i}))
    for _ in range(10):
        channel.basic_publish("orders", "us.order", b"y" * 10)
    for _ in range(5):
        try:
            channel.basic_publish("plain", "k", b"z", mandatory=True)
        except pika.exceptions.UnroutableError:
            pass
    for queue, count in (("eu", 20), ("all", 30)):
        for n in range(count):
            method, _props, _body = channel.basic_get(queue)
            assert method is not None
            if queue == "all" and n < 3:
                channel.basic_reject(method.delivery_tag, requeue=False)
            else:
                channel.basic_ack(method.delivery_tag)
    connection.close()


def record_journal(root: Path) -> Path:
    """Run ``send_traffic`` through a fresh broker journaling into ``root`` and return ``root``."""
    broker = start_broker_process(
        "--journal-dir", str(root), "--journal-mode", "full", "--journal-capture-routing"
    )
    started = time.monotonic()
    try:
        send_traffic(broker.url)
    finally:
        assert broker.stop() == 0  # SIGTERM: the journal completes (renames) its files on the way out
    assert time.monotonic() - started < 60
    assert not list(root.rglob(".*")), "in-progress files left behind"
    return root


def write_definitions(folder: Path) -> tuple[Path, Path]:
    """defs-a.json (the topology the traffic ran on) and defs-b.json (the candidate) in ``folder``."""
    defs_a, defs_b = folder / "defs-a.json", folder / "defs-b.json"
    defs_a.write_text(json.dumps(definitions(eu_binding=True, plain_ae=False)))
    defs_b.write_text(json.dumps(definitions(eu_binding=False, plain_ae=True)))
    return defs_a, defs_b
