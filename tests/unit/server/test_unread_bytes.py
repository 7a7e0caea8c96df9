"""``unread_bytes``: what the kernel holds for a socket that nobody has read yet (the heartbeat check)."""

from __future__ import annotations

import socket

from broker.server.sockets import unread_bytes


def test_counts_received_bytes_until_they_are_read() -> None:
    left, right = socket.socketpair()
    with left, right:
        assert unread_bytes(right.fileno()) == 0
        left.sendall(b"\x08\x00\x00\x00\x00\x00\x00\xce")
        assert unread_bytes(right.fileno()) == 8
        right.recv(3)
        assert unread_bytes(right.fileno()) == 5


def test_no_socket_reads_as_nothing_unread() -> None:
    assert unread_bytes(-1) == 0
    closed = socket.socket()
    fd = closed.fileno()
    closed.close()
    assert unread_bytes(fd) == 0  # EBADF
