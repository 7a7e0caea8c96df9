"""The frame harness's own machinery: the decoder keeps what a strict client reads, normalisation hides only
the listed volatile values, and the proxy records both directions unchanged."""

from __future__ import annotations

import socket
import struct
import threading

from pamqp import commands, frame
from pamqp.base import Frame as Method

from protocol.codec import make_method

from .frames.compare import Transcript, per_step
from .frames.normalise import Names, normalise_record, rename_strings
from .frames.proxy import RecordingProxy
from .frames.raw import method
from .frames.wire import Frame, Splitter, decode


def _decoded(value: Method, channel: int = 1) -> dict[str, object]:
    frames = Splitter().feed(method(channel, value))
    assert len(frames) == 1
    return decode(frames[0])


def test_reserved_arguments_and_sizes_are_kept() -> None:
    # channel.open-ok's reserved long string: "" and "0" are different frames to a strict client.
    empty = _decoded(make_method(commands.Channel.OpenOk, channel_id=""))
    zero = _decoded(commands.Channel.OpenOk(channel_id="0"))
    assert empty["args"] == [["channel_id", "longstr", ""]]
    assert zero["args"] == [["channel_id", "longstr", "0"]]
    assert (empty["size"], zero["size"]) == (8, 9)
    assert empty != zero


def test_field_table_types_and_order_are_kept() -> None:
    # A long-int "I" and a long-long "l" of the same value, in wire order, are told apart.
    table = b"\x01bl" + struct.pack("!q", 5) + b"\x01aI" + struct.pack("!i", 5)
    payload = struct.pack("!HHH", 50, 10, 0) + b"\x01q" + b"\x00" + struct.pack("!I", len(table)) + table
    record = decode(Frame(1, 1, payload))
    assert record["args"][-1] == ["arguments", "table", [["b", "l", 5], ["a", "I", 5]]]


def test_generated_names_are_numbered_and_real_differences_survive() -> None:
    names = Names("cmp123")
    lines = rename_strings(["amq.gen-AbC q=cmp123-x", "amq.gen-XyZ", "amq.gen-AbC ctag1." + "a" * 32], names)
    assert lines == ["amq.gen#0 q=P-x", "amq.gen#1", "amq.gen#0 ctag#0"]
    close = _decoded(
        commands.Channel.Close(reply_code=404, reply_text="NOT_FOUND", class_id=60, method_id=40)
    )
    other = _decoded(commands.Channel.Close(reply_code=404, reply_text="NOT_FOUND", class_id=0, method_id=0))
    assert normalise_record(close) != normalise_record(other)


def test_the_proxy_records_both_directions_in_steps() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def broker() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(8)
            conn.sendall(
                frame.marshal(commands.Connection.Tune(channel_max=1, frame_max=4096, heartbeat=0), 0)
            )
            conn.recv(100)

    thread = threading.Thread(target=broker)
    thread.start()
    with RecordingProxy(f"amqp://guest:guest@127.0.0.1:{port}/") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port)) as client:
            client.sendall(b"AMQP\x00\x00\x09\x01")
            client.recv(100)
        thread.join(5)
        proxy.settle(2.0)
        transcript = per_step(proxy.recordings, "")
    server.close()
    assert isinstance(transcript, Transcript)
    assert transcript.lines[0].startswith('c0 step1 C ch0 {"kind":"protocol-header"')
    assert '"method":"Connection.Tune"' in transcript.lines[1]
    assert transcript.lines[1].startswith("c0 step1 S ch0")


def test_sasl_mechanisms_compare_as_a_set_and_other_differences_survive() -> None:
    def start(mechanisms: str, locales: str = "en_US") -> object:
        return normalise_record(
            _decoded(commands.Connection.Start(server_properties={}, mechanisms=mechanisms, locales=locales))
        )

    assert start("ANONYMOUS PLAIN AMQPLAIN") == start("ANONYMOUS AMQPLAIN PLAIN")
    assert start("ANONYMOUS PLAIN AMQPLAIN") != start("PLAIN AMQPLAIN")
    assert start("PLAIN AMQPLAIN") != start("PLAIN AMQPLAIN", locales="de_DE")
