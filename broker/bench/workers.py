"""Producer and consumer loops run in their own processes; they return plain dicts to the runner."""

from __future__ import annotations

import selectors
import struct
import time
from typing import Any

from pamqp import commands

from broker.bench.client import Connection, publish_frames
from protocol.codec import encode_method, make_method
from protocol.fastpath import BASIC_ACK, BASIC_DELIVER, encode_basic_ack
from protocol.framing import FRAME_BODY, FRAME_METHOD

_STAMP = struct.Struct("!q")
_TAG = struct.Struct("!Q")
_DELIVER = BASIC_DELIVER.to_bytes(4, "big")
_ACK = BASIC_ACK.to_bytes(4, "big")
_SAMPLE_EVERY = 7  # latency sample stride: keeps the consumer cheap at high rates


def _body(size: int, stamped: bool) -> bytes:
    return b"\0" * size if not stamped else _STAMP.pack(0) + b"\0" * max(0, size - 8)


def produce(
    url: str,
    exchange: str,
    routing_keys: list[str],
    size: int,
    count: int,
    rate: float = 0.0,
    batch: int = 500,
    stamped: bool = False,
) -> dict[str, Any]:
    """Publish ``count`` messages, cycling over ``routing_keys``; at ``rate`` msg/s when given, else flat out.

    Unstamped messages are encoded once per key and written in large batches. Stamped messages carry the send
    time (CLOCK_MONOTONIC ns, comparable across processes) in their first 8 body bytes for latency.
    """
    conn = Connection(url)
    conn.open_channel(1)
    sock = conn.sock
    started = time.monotonic()
    sent = 0
    if not stamped:
        encoded = [publish_frames(1, exchange, key, _body(size, False)) for key in routing_keys]
        chunk = (
            b"".join(encoded[i % len(encoded)] for i in range(batch))
            if len(encoded) > 1
            else encoded[0] * batch
        )
        while sent + batch <= count:
            sock.sendall(chunk)
            sent += batch
        for i in range(sent, count):
            sock.sendall(encoded[i % len(encoded)])
        sent = count
    else:
        tick = max(1, int(rate / 1000)) if rate else batch  # messages per ~1 ms tick when paced
        filler = b"\0" * max(0, size - 8)
        while sent < count:
            n = min(tick, count - sent)
            now_ns = time.monotonic_ns()
            parts = [
                publish_frames(
                    1, exchange, routing_keys[(sent + i) % len(routing_keys)], _STAMP.pack(now_ns) + filler
                )
                for i in range(n)
            ]
            sock.sendall(b"".join(parts))
            sent += n
            if rate:
                due = started + sent / rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
    finished = time.monotonic()
    conn.close()
    return {"sent": sent, "send_s": finished - started, "started": started}


def consume(
    url: str,
    queues: list[str],
    expected: int,
    ack: str = "none",
    prefetch: int = 0,
    multi_every: int = 50,
    timeout_s: float = 60.0,
) -> dict[str, Any]:
    """Consume from each queue on its own connection until ``expected`` deliveries in total (or the timeout).

    ``ack``: "none" (no_ack), "each" (an ack per delivery), "multi" (multiple=true every ``multi_every``).
    Latency is sampled from stamped bodies.
    """
    selector = selectors.DefaultSelector()
    conns: list[Connection] = []
    for queue in queues:
        conn = Connection(url)
        conn.open_channel(1)
        if prefetch:
            conn.rpc(1, commands.Basic.Qos(prefetch_count=prefetch), commands.Basic.QosOk)
        consume_method = make_method(
            commands.Basic.Consume, queue=queue, consumer_tag="", no_ack=ack == "none", arguments={}
        )
        conn.rpc(1, consume_method, commands.Basic.ConsumeOk)
        conn.sock.setblocking(False)
        selector.register(conn.sock, selectors.EVENT_READ, conn)
        conns.append(conn)
    received = 0
    first = last = 0.0
    latencies_us: list[float] = []
    unacked: dict[Connection, int] = {}
    deadline = time.monotonic() + timeout_s
    # Deliveries carry their tag right after the consumer tag; the body frame follows the content header.
    want_stamp = False
    while received < expected and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            conn = key.data
            try:
                data = conn.sock.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                raise RuntimeError("broker closed a consumer connection")
            now = time.monotonic()
            acks: list[bytes] = []
            for frame_type, _, payload in conn.buffer.feed(data):
                if frame_type == FRAME_METHOD and payload[:4] == _DELIVER:
                    received += 1
                    if not first:
                        first = now
                    want_stamp = received % _SAMPLE_EVERY == 0
                    if ack != "none":
                        tag = _TAG.unpack_from(payload, 5 + payload[4])[0]
                        if ack == "each":
                            acks.append(encode_basic_ack(1, tag, False))
                        else:
                            pending = unacked.get(conn, 0) + 1
                            unacked[conn] = pending
                            if pending >= multi_every:
                                acks.append(encode_basic_ack(1, tag, True))
                                unacked[conn] = 0
                elif frame_type == FRAME_BODY and want_stamp and len(payload) >= 8:
                    want_stamp = False
                    stamp = _STAMP.unpack_from(payload)[0]
                    if stamp:
                        latencies_us.append((time.monotonic_ns() - stamp) / 1000)
            if acks:
                conn.sock.setblocking(True)
                conn.sock.sendall(b"".join(acks))
                conn.sock.setblocking(False)
            last = now
    for conn in conns:
        conn.sock.setblocking(True)
        conn.close()
    return {"received": received, "first": first, "last": last, "latencies_us": latencies_us}


def confirm_publish(
    url: str, queue: str, size: int, count: int, window: int, persistent: bool
) -> dict[str, Any]:
    """Publish with confirms, keeping at most ``window`` messages unconfirmed."""
    conn = Connection(url)
    conn.open_channel(1)
    conn.rpc(1, commands.Confirm.Select(), commands.Confirm.SelectOk)
    frame = publish_frames(1, "", queue, b"\0" * size, persistent=persistent)
    sent = confirmed = 0
    started = time.monotonic()
    while confirmed < count:
        room = min(window - (sent - confirmed), count - sent)
        if room > 0:
            conn.sock.sendall(frame * room)
            sent += room
        for frame_type, _, payload in conn.read_frames():
            if frame_type == FRAME_METHOD and payload[:4] == _ACK:
                tag, multiple = _TAG.unpack_from(payload, 4)[0], payload[12] & 1
                confirmed = tag if multiple else max(confirmed, tag)
    elapsed = time.monotonic() - started
    conn.close()
    return {"confirmed": confirmed, "seconds": elapsed}


def open_idle(url: str, n: int) -> list[Connection]:
    """``n`` handshaken connections with one open channel each, held open by the caller."""
    conns = []
    for _ in range(n):
        conn = Connection(url)
        conn.open_channel(1)
        conns.append(conn)
    return conns


def declare_nowait(conn: Connection, methods: list[Any]) -> None:
    """Pipeline many nowait declares/binds in one write, then one RPC as a barrier."""
    conn.sock.sendall(b"".join(encode_method(1, method) for method in methods))
    conn.rpc(1, commands.Basic.Qos(prefetch_count=0), commands.Basic.QosOk)
