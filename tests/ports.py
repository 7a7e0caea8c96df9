"""Ports for the servers tests start (RabbitMQ oracles, PostgreSQL, WarrenMQ nodes with fixed ports).

A port from ``bind(0)`` is an ephemeral one: between the pick and the server's bind (an Erlang node binds
seconds later) it may become the local port of some outgoing connection, or another worker's pick. So ports
come from below the ephemeral range (Linux's ``ip_local_port_range`` starts at 32768), each pytest-xdist
worker from its own slice of it, handed out in turn so a process never gets the same port twice while it
has slice left, and only when nothing holds it now.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

_FIRST = 10000
_LAST = 32000
_SLICE = 3000  # seven workers' slices below _LAST; more workers share them modulo


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ...; unset outside xdist
    return int(worker[2:]) + 1 if worker.startswith("gw") and worker[2:].isdigit() else 0


def _candidates() -> Iterator[int]:
    slices = (_LAST - _FIRST) // _SLICE
    start = _FIRST + (_worker_index() % slices) * _SLICE
    offset = (os.getpid() * 37) % _SLICE  # two runs side by side in one slice rarely start together
    while True:
        for step in range(_SLICE):
            yield start + (offset + step) % _SLICE


_PORTS = _candidates()


def free_port() -> int:
    """A port below the ephemeral range, in this worker's slice, that nothing is bound to now."""
    for _ in range(_SLICE):
        port = next(_PORTS)
        with socket.socket() as sock:
            # SO_REUSEADDR as the servers set it: a port left in TIME_WAIT by a stopped server is usable.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in this worker's slice below the ephemeral range")
