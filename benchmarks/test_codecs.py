"""Hot-path codec microbenchmarks (`make bench`): frame parsing and the struct fast paths vs pamqp."""

from __future__ import annotations

from typing import Any

from pamqp import commands, frame, header
from pamqp.body import ContentBody

from protocol.codec import encode_content
from protocol.content_header import parse_content_header
from protocol.fastpath import decode_basic_publish, encode_basic_deliver
from protocol.framing import FrameBuffer

PUBLISH = frame.marshal(commands.Basic.Publish(exchange="", routing_key="bench"), 1)
HEADER = frame.marshal(header.ContentHeader(0, 16, commands.Basic.Properties(delivery_mode=1)), 1)
BODY = frame.marshal(ContentBody(b"x" * 16), 1)
BATCH = (PUBLISH + HEADER + BODY) * 1_000


def test_feed_and_decode_1000_publishes(benchmark: Any) -> None:
    def run() -> int:
        buffer = FrameBuffer(131072, expect_protocol_header=False)
        count = 0
        for frame_type, _, payload in buffer.feed(BATCH):
            if frame_type == 1:
                decode_basic_publish(payload)
            elif frame_type == 2:
                parse_content_header(payload)
                count += 1
        return count

    assert benchmark(run) == 1_000


def test_pamqp_unmarshal_1000_publishes_for_comparison(benchmark: Any) -> None:
    def run() -> int:
        data, count = BATCH, 0
        while data:
            consumed, _, _ = frame.unmarshal(data)
            data = data[consumed:]
            count += 1
        return count

    assert benchmark(run) == 3_000


def test_encode_1000_deliveries(benchmark: Any) -> None:
    header_payload = HEADER[7:-1]

    def run() -> int:
        size = 0
        for tag in range(1, 1_001):
            size += len(encode_basic_deliver(1, "amq.ctag-bench", tag, False, "", "bench"))
            size += sum(len(part) for part in encode_content(1, header_payload, b"x" * 16, 131072))
        return size

    assert benchmark(run) > 0
