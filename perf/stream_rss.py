"""Resident memory of a `warrenmq serve` holding a long stream (read from its files): publish N x 1 KiB into a
durable stream with small segments, then read the broker's VmRSS and the management API's message_bytes_ram
after the appends, after a restart, and after a replay from first. Usage: `python perf/stream_rss.py
--messages 200000 --segment-bytes 1048576` (figures in docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import pika

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.conftest import BrokerProcess, start_broker_process

BODY = b"x" * 1024


def rss_mib(broker: BrokerProcess) -> float:
    for line in Path(f"/proc/{broker.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def ram_bytes(broker: BrokerProcess) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{broker.management_port}/api/queues/%2F/long")
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request) as response:
        return int(json.load(response)["message_bytes_ram"])


def replay(broker: BrokerProcess, count: int) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(broker.url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=1000)
    seen = [0]

    def on_message(c: Any, method: Any, _props: Any, _body: bytes) -> None:
        seen[0] += 1
        if seen[0] % 500 == 0:
            c.basic_ack(method.delivery_tag, multiple=True)

    channel.basic_consume("long", on_message, arguments={"x-stream-offset": "first"})
    while seen[0] < count:
        connection.process_data_events(time_limit=1)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--segment-bytes", type=int, default=1024 * 1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        broker = start_broker_process("--data-dir", data)
        try:
            idle = rss_mib(broker)
            connection = pika.BlockingConnection(pika.URLParameters(broker.url))
            channel = connection.channel()
            stream = {"x-queue-type": "stream", "x-stream-max-segment-size-bytes": args.segment_bytes}
            channel.queue_declare("long", durable=True, arguments=stream)
            for _ in range(args.messages - 1):
                channel.basic_publish("", "long", BODY)
            channel.confirm_delivery()
            channel.basic_publish("", "long", BODY)
            connection.close()
            print(f"idle broker: {idle:.0f} MiB RSS")
            print(f"after {args.messages} appends: {rss_mib(broker):.0f} MiB RSS, ram {ram_bytes(broker)} B")
        finally:
            broker.stop()
        broker = start_broker_process("--data-dir", data)
        try:
            print(f"after restart: {rss_mib(broker):.0f} MiB RSS, ram {ram_bytes(broker)} B")
            replay(broker, args.messages)
            print(f"after replay from first: {rss_mib(broker):.0f} MiB RSS, ram {ram_bytes(broker)} B")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
