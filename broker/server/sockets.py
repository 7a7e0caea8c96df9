"""Listening sockets as RabbitMQ opens them: the wildcard address is one dual-stack ``[::]`` socket that takes
IPv4 clients too (IPV6_V6ONLY off), falling back to ``0.0.0.0`` on a machine without IPv6; any other address,
IPv6 literals included, is bound as given. asyncio's own ``create_server(host="::")`` sets IPV6_V6ONLY, and
``host=None`` opens two sockets that, for port 0, get two different ports: hence one socket made here and
handed to ``create_server(sock=...)`` / aiohttp's ``SockSite``."""

from __future__ import annotations

import fcntl
import socket
import struct
import termios

# The wildcard addresses; "::" is RabbitMQ's default (listeners.tcp.default = 5672 listens on [::]).
WILDCARDS = frozenset({"", "::", "0.0.0.0", "[::]"})
DUAL_STACK = "::"


def has_ipv6() -> bool:
    """Whether this machine can bind an IPv6 socket (a kernel without IPv6, or ipv6.disable=1, cannot)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def unbracket(host: str) -> str:
    """``[::1]`` (RabbitMQ's listener syntax) as the address ``::1``."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def effective_host(host: str) -> str:
    """The address a listener for ``host`` binds: ``::`` stands for dual-stack, or ``0.0.0.0`` without
    IPv6; ``0.0.0.0`` stays IPv4-only, as in RabbitMQ."""
    host = unbracket(host)
    if host in ("", "::"):
        return DUAL_STACK if has_ipv6() else "0.0.0.0"
    return host


# Connections the kernel completes before the broker accepts them. RabbitMQ's default is 128 and its
# networking guide raises it to 4096 for connection storms; with asyncio's 100, 400 clients connecting at
# once overflowed it: SYN cookies, retransmits and handshakes tens of seconds late (tests/integration/
# test_scale.py). The kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 1024


def listen_socket(host: str, port: int, backlog: int = LISTEN_BACKLOG) -> socket.socket:
    """A bound, listening, non-blocking TCP socket (SO_REUSEADDR, as RabbitMQ's listeners); OSError when the
    address is taken or not local."""
    address = effective_host(host)
    infos = socket.getaddrinfo(_host_bytes(address), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            # "::" accepts IPv4 too (v4-mapped); a specific IPv6 address is IPv6-only anyway.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if address == DUAL_STACK else 1)
        sock.bind(sockaddr)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _host_bytes(address: str) -> str | bytes:
    """``address`` as getaddrinfo should get it: an ASCII name or literal as bytes, which it uses as they are;
    given a str, CPython encodes every host with the ``idna`` codec, whose import (encodings.idna, stringprep,
    unicodedata and their regexes) cost each start ~3 ms before its first listener. For ASCII the
    codec's result is those same bytes; a non-ASCII name still goes through it. A malformed ASCII name (an
    empty label) is then getaddrinfo's OSError, as for any name that does not resolve, not a UnicodeError."""
    return address.encode("ascii") if address.isascii() else address


def display_host(host: str) -> str:
    """An address as it goes into a URL: IPv6 literals in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def display_address(host: str, port: int) -> str:
    """A listening address as RabbitMQ prints one (``[::]:5672``, ``127.0.0.1:25672``), never ``:::5672``."""
    return f"{display_host(host)}:{port}"


def unread_bytes(fd: int) -> int:
    """Bytes the kernel holds for ``fd`` that the broker has not read yet (FIONREAD; 0 when unknown)."""
    if fd < 0:
        return 0
    try:
        (count,) = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))
    except OSError:
        return 0
    return int(count)
