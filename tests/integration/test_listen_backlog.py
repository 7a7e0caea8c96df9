"""The AMQP listener's accept queue is LISTEN_BACKLOG long, not asyncio's default of 100: ``create_server``
calls listen() again on the socket it is given (read back with ``ss``, whose Send-Q column is a listening
socket's backlog)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from broker.server.sockets import LISTEN_BACKLOG
from broker.testing.embed import BrokerThread

pytestmark = pytest.mark.skipif(shutil.which("ss") is None, reason="no ss (iproute2) on this machine")


def _backlog(port: int) -> int:
    shown = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert shown[0] == "LISTEN", shown
    return int(shown[2])  # State Recv-Q Send-Q ...: a listener's Send-Q is its backlog


def test_the_amqp_listener_keeps_its_backlog() -> None:
    with BrokerThread() as broker:
        assert _backlog(broker.embedded.port) == min(LISTEN_BACKLOG, _somaxconn())


def _somaxconn() -> int:
    with open("/proc/sys/net/core/somaxconn") as limit:
        return int(limit.read())
