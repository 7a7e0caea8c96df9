"""Raw scenario: malformed input before the connection is open, in each handshake state.

RabbitMQ (rabbit_reader:handle_exception/3) drops the socket without a reply, after 3 s, for every error
before tune-ok is handled, and for undecodable connection.open fields; it answers frame errors and refusals
after tune-ok with a connection.close. All cases run side by side on connections of their own, so the harness
waits for the 3 s once.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from pamqp import commands as c

from .raw import PROTOCOL_HEADER, RawClient, method, raw_frame
from .raw_table import raw_scenario


def _start_ok(properties: bytes = b"\x00\x00\x00\x00", response: bytes | None = None) -> bytes:
    response = struct.pack("!I", 12) + b"\x00guest\x00guest" if response is None else response
    return raw_frame(1, 0, b"\x00\x0a\x00\x0b" + properties + b"\x05PLAIN" + response + b"\x05en_US")


_TUNE_OK = method(0, c.Connection.TuneOk(channel_max=2047, frame_max=131072, heartbeat=0))
_OPEN = method(0, c.Connection.Open(virtual_host="/"))
_OVERSIZED = raw_frame(1, 0, b"\x00\x0a\x00\x0b" + b"\x00" * 5000)  # over the pre-auth frame_max (4096)
_CASES: dict[str, tuple[tuple[bytes, ...], bytes]] = {
    # name: (handshake frames sent first, each waited for; the malformed input)
    "starting-oversized-frame": ((), _OVERSIZED),
    "starting-undecodable-table": ((), _start_ok(properties=b"\x00\x00\x00\x03\x01kZ")),
    "starting-table-past-its-end": ((), _start_ok(properties=b"\x00\x00\x00\x0a\x01kS\x00\x00\x00\x32abc")),
    "starting-truncated-longstr": ((), _start_ok(response=struct.pack("!I", 500) + b"\x00guest")),
    "starting-bad-frame-end": ((), raw_frame(1, 0, b"\x00\x0a\x00\x0b")[:-1] + b"\x00"),
    "starting-unexpected-method": ((), _TUNE_OK),
    "starting-channel-frame": ((), method(1, c.Channel.Open())),
    "starting-sasl-syntax": ((), _start_ok(response=struct.pack("!I", 5) + b"guest")),
    "tuning-oversized-frame": ((_start_ok(),), raw_frame(1, 0, b"\x00\x0a\x00\x1f" + b"\x00" * 5000)),
    "tuning-frame-max-too-high": ((_start_ok(),), method(0, c.Connection.TuneOk(frame_max=262144))),
    "tuning-truncated-method": ((_start_ok(),), raw_frame(1, 0, b"\x00\x0a\x00\x1f\x00")),
    "opening-truncated-shortstr": ((_start_ok(), _TUNE_OK), raw_frame(1, 0, b"\x00\x0a\x00\x28\x05/")),
    "opening-oversized-frame": (
        (_start_ok(), _TUNE_OK),
        raw_frame(1, 0, b"\x00\x0a\x00\x28" + b"\0" * 140000),
    ),
    "opening-bad-frame-end": ((_start_ok(), _TUNE_OK), _OPEN[:-1] + b"\x00"),
    "opening-unknown-vhost": ((_start_ok(), _TUNE_OK), method(0, c.Connection.Open(virtual_host="nope"))),
}
_WAIT_FOR = ("Connection.Start", "Connection.Tune")


@raw_scenario
def malformed_before_open(open_client: Callable[[], RawClient], prefix: str) -> None:
    del prefix
    clients = []
    for before, _ in _CASES.values():
        client = open_client()
        client.step(PROTOCOL_HEADER, until=["Connection.Start"])
        for number, frames in enumerate(before):
            client.step(frames, until=[_WAIT_FOR[number + 1]] if number + 1 < len(_WAIT_FOR) else [])
        clients.append(client)
    for client, (_, bad) in zip(clients, _CASES.values(), strict=True):
        client.sock.sendall(bad)
    # Answer each connection.close as soon as it arrives (the broker closes 3 s after a frame error whether or
    # not it got a close-ok); the silent ones just close.
    pending = list(clients)
    while pending:
        for client in list(pending):
            answer = client.step(b"", until=["Connection.Close"], timeout_s=0.05)
            if any(record.get("method") == "Connection.Close" for record in answer):
                client.step(method(0, c.Connection.CloseOk()))
            if client.closed or any(record.get("method") == "Connection.Close" for record in answer):
                pending.remove(client)


@raw_scenario
def anonymous_login(open_client: Callable[[], RawClient], prefix: str) -> None:
    """start-ok with ANONYMOUS and an empty response: RabbitMQ 4.0 offers the mechanism and logs in as its
    anonymous_login_user (guest, allowed from loopback); 3.x does not offer it, and drops the socket after 3 s
    as for every error before tune-ok."""
    del prefix
    client = open_client()
    client.step(PROTOCOL_HEADER, until=["Connection.Start"])
    anonymous = method(0, c.Connection.StartOk(response="", mechanism="ANONYMOUS"))
    answer = client.step(anonymous, until_any=["Connection.Tune"], timeout_s=5.0)
    if not any(record.get("method") == "Connection.Tune" for record in answer):
        client.step(b"", closed=True)
        return
    client.step(_TUNE_OK + _OPEN, until=["Connection.OpenOk"])
    client.close()
