"""What forwarding a published message to another process costs, against handling it where it arrived.

docs/scaling.md's cost model needs one figure this broker does not have yet: the CPU a message costs when the
process that read it from the client is not the one that owns its queue, and hands it on over a Unix socket.
The cheapest such hand-off forwards the publish's frames as the client sent them (method, content header,
body), several messages per write, and the owner splits them with the same C scanner (protocol/_wire.c
``scan``) it runs on client sockets. This measures, for batches of 1 to 256 messages per write:

- the sender's CPU per message: the scan that finds where each publish ends (the router needs the exchange
  and routing key to pick the owner) plus its share of one ``sendall``;
- the receiver's CPU per message: its share of one ``recv_into`` plus the scan of what arrived.

Both are CPU time (user + system) of each process over the run, divided by the messages moved, so another
load on the machine changes them little. The broker's own per-message CPU to compare with comes from
``perf/ab.py`` (publish -> consume, ack each, ack/50).

    python perf/forward_cost.py                     # 16-byte bodies, 400,000 messages per batch size
    python perf/forward_cost.py --body 1024 --count 200000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import struct
import time

from protocol import _wire

FRAME_END = b"\xce"


def _frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", frame_type, channel, len(payload)) + payload + FRAME_END


def publish_frames(body: bytes, exchange: str = "", routing_key: str = "q") -> bytes:
    """basic.publish + content header (no properties) + one body frame, on channel 1."""
    x, k = exchange.encode(), routing_key.encode()
    method = struct.pack(">HHH", 60, 40, 0) + bytes([len(x)]) + x + bytes([len(k)]) + k + b"\x00"
    header = struct.pack(">HHQH", 60, 0, len(body), 0)
    return _frame(1, 1, method) + _frame(2, 1, header) + _frame(3, 1, body)


def _cpu_s(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _scan_all(data: bytes) -> int:
    """Messages in ``data`` (whole publishes only), split by the C scanner as a session does."""
    items, _ = _wire.scan(data, 0, 1 << 20)
    return sum(1 for item in items if item[0] == _wire.FRAME_PUBLISH)


def _receiver(sock: socket.socket, expected: int, result_fd: int) -> None:
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    pending = b""
    seen = 0
    start = _cpu_s()
    while seen < expected:
        n = sock.recv_into(view)
        if n == 0:
            break
        data = pending + bytes(view[:n]) if pending else bytes(view[:n])
        items, pos = _wire.scan(data, 0, 1 << 20)
        seen += sum(1 for item in items if item[0] == _wire.FRAME_PUBLISH)
        pending = data[pos:]
    os.write(result_fd, json.dumps({"cpu_s": _cpu_s() - start, "seen": seen}).encode())


def measure(batch: int, count: int, body_size: int) -> dict[str, float]:
    one = publish_frames(b"x" * body_size)
    chunk = one * batch
    writes = count // batch
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        left.close()
        _receiver(right, writes * batch, write_fd)
        os._exit(0)
    right.close()
    start_cpu, start_wall = _cpu_s(), time.perf_counter()
    for _ in range(writes):
        _scan_all(chunk)  # the router's look at exchange and routing key, per message
        left.sendall(chunk)
    sender_cpu = _cpu_s() - start_cpu
    left.shutdown(socket.SHUT_WR)
    os.waitpid(child, 0)
    wall = time.perf_counter() - start_wall
    received = json.loads(os.read(read_fd, 4096))
    left.close()
    moved = writes * batch
    assert received["seen"] == moved, received
    return {
        "batch": batch,
        "bytes_per_msg": len(one),
        "sender_us_per_msg": sender_cpu / moved * 1e6,
        "receiver_us_per_msg": received["cpu_s"] / moved * 1e6,
        "total_us_per_msg": (sender_cpu + received["cpu_s"]) / moved * 1e6,
        "msg_per_s": moved / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--body", type=int, default=16, help="body bytes per message")
    parser.add_argument("--count", type=int, default=400_000, help="messages per batch size")
    parser.add_argument("--batches", default="1,16,64,256", help="messages per write, comma-separated")
    args = parser.parse_args()
    scan_only = publish_frames(b"x" * args.body) * 256
    rounds = max(1, args.count // 256)
    start = _cpu_s()
    for _ in range(rounds):
        _scan_all(scan_only)
    scan_us = (_cpu_s() - start) / (rounds * 256) * 1e6
    print(json.dumps({"scan_us_per_msg": round(scan_us, 3)}))
    for batch in (int(b) for b in args.batches.split(",")):
        row = measure(batch, args.count, args.body)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}))


if __name__ == "__main__":
    main()
