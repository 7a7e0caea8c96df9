"""Frames exactly as a broker sends them: a raw-socket client that reads (type, channel, payload bytes), for
checks pamqp's decoder would forgive (reserved fields, class/method ids of a close, heartbeat timing).

The handshake and the frames sent are ``tests.integration.helpers.RawAMQP``'s; what is read after it is not
decoded unless asked.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from urllib.parse import urlparse

from tests.integration.raw_amqp import RawAMQP

FRAME_METHOD = 1
FRAME_HEADER = 2
FRAME_BODY = 3
FRAME_HEARTBEAT = 8
FRAME_END = 0xCE
_FRAME_HEAD = struct.Struct("!BHI")
_IDS = struct.Struct("!HH")


@dataclass(frozen=True, slots=True)
class WireFrame:
    frame_type: int
    channel: int
    payload: bytes
    received_at: float  # time.monotonic() when its last byte was read

    @property
    def ids(self) -> tuple[int, int]:
        """A method frame's (class id, method id)."""
        assert self.frame_type == FRAME_METHOD, f"not a method frame: type {self.frame_type}"
        class_id, method_id = _IDS.unpack_from(self.payload)
        return class_id, method_id

    @property
    def arguments(self) -> bytes:
        """A method frame's argument bytes, reserved fields included."""
        return self.payload[4:]


def close_ids(frame: WireFrame) -> tuple[int, str, int, int]:
    """(reply code, reply text, class id, method id) of a channel.close or a connection.close."""
    assert frame.ids in ((20, 40), (10, 50)), f"not a close: {frame.ids}"
    args = frame.arguments
    code = struct.unpack_from("!H", args)[0]
    text_len = args[2]
    text = args[3 : 3 + text_len].decode(errors="backslashreplace")
    class_id, method_id = _IDS.unpack_from(args, 3 + text_len)
    return code, text, class_id, method_id


class WireClient(RawAMQP):
    """RawAMQP whose reads after the handshake return ``WireFrame``s, undecoded."""

    @classmethod
    def connect(cls, url: str, timeout_s: float = 5.0) -> WireClient:
        parsed = urlparse(url)
        return cls(parsed.hostname or "127.0.0.1", parsed.port or 5672, timeout_s)

    def frame(self, timeout_s: float | None = None) -> WireFrame:
        """The next frame as sent; raises SocketClosed or TimeoutError."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while True:
            buffer = self._buffer
            if len(buffer) >= 7:
                frame_type, channel, size = _FRAME_HEAD.unpack_from(buffer)
                end = 7 + size
                if len(buffer) > end:
                    assert buffer[end] == FRAME_END, f"bad frame end {buffer[end]:#x}"
                    self._buffer = buffer[end + 1 :]
                    return WireFrame(frame_type, channel, bytes(buffer[7:end]), time.monotonic())
            self.read_more(deadline)

    def method_frame(self, timeout_s: float | None = None) -> WireFrame:
        """The next method frame (heartbeats, headers and bodies skipped)."""
        while True:
            frame = self.frame(timeout_s)
            if frame.frame_type == FRAME_METHOD:
                return frame
