"""Listening sockets as RabbitMQ opens them (broker/server/sockets.py): the wildcard is one dual-stack
``[::]`` socket that IPv4 clients reach too; ``0.0.0.0`` stays IPv4-only and an IPv6 address IPv6-only."""

from __future__ import annotations

import socket

import pytest

from broker.server.sockets import display_address, display_host, effective_host, has_ipv6, listen_socket

needs_ipv6 = pytest.mark.skipif(not has_ipv6(), reason="this machine has no IPv6")


def _reaches(address: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as client:
        client.settimeout(2)
        try:
            client.connect((address, port))
        except OSError:
            return False
    return True


@needs_ipv6
@pytest.mark.parametrize("host", ["::", "", "[::]"])
def test_the_wildcard_listens_on_both_families_with_one_port(host: str) -> None:
    with listen_socket(host, 0) as server:
        port = server.getsockname()[1]
        assert server.family == socket.AF_INET6
        assert (_reaches("127.0.0.1", port), _reaches("::1", port)) == (True, True)


@needs_ipv6
def test_ipv4_any_and_ipv6_loopback_stay_in_their_family() -> None:
    with listen_socket("0.0.0.0", 0) as ipv4, listen_socket("::1", 0) as ipv6:
        assert (_reaches("127.0.0.1", ipv4.getsockname()[1]), _reaches("::1", ipv4.getsockname()[1])) == (
            True,
            False,
        )
        assert (_reaches("127.0.0.1", ipv6.getsockname()[1]), _reaches("::1", ipv6.getsockname()[1])) == (
            False,
            True,
        )


def test_without_ipv6_the_wildcard_is_ipv4_any(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("broker.server.sockets.has_ipv6", lambda: False)
    assert (effective_host("::"), effective_host("::1"), effective_host("10.0.0.1")) == (
        "0.0.0.0",
        "::1",
        "10.0.0.1",
    )
    with listen_socket("::", 0) as server:
        assert server.family == socket.AF_INET


def test_urls_bracket_ipv6_addresses() -> None:
    assert (display_host("::"), display_host("127.0.0.1"), display_host("[::1]")) == (
        "[::]",
        "127.0.0.1",
        "[::1]",
    )


def test_a_host_name_binds_as_getaddrinfo_resolves_it() -> None:
    """Names reach getaddrinfo as ASCII bytes, not through the idna codec (start-up): resolved the same."""
    expected = str(
        socket.getaddrinfo("localhost", 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][4][0]
    )
    with listen_socket("localhost", 0) as server:
        assert server.getsockname()[0] == expected
        assert _reaches(expected, server.getsockname()[1])


def test_a_name_that_does_not_resolve_is_an_os_error() -> None:
    # What the listeners report as "cannot listen": a bad name never surfaces as a codec error.
    for name in ("no-such-host.invalid", "bücher.invalid", "a..b"):
        with pytest.raises(OSError):
            listen_socket(name, 0)


@pytest.mark.parametrize(
    ("host", "port", "shown"),
    [("::", 5672, "[::]:5672"), ("::1", 15672, "[::1]:15672"), ("127.0.0.1", 25672, "127.0.0.1:25672"),
     ("[::]", 5672, "[::]:5672"), ("localhost", 5672, "localhost:5672")],
)  # fmt: skip
def test_listening_addresses_print_as_rabbitmq_prints_them(host: str, port: int, shown: str) -> None:
    assert display_address(host, port) == shown
