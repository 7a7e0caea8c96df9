"""loopback_users at the session boundary: the peer address the server hands the session decides whether a
loopback-only user (default guest) may log in (rabbit_access_control:check_user_loopback)."""

from __future__ import annotations

import pytest
from pamqp import commands
from pamqp.common import FieldTable

from broker.core.broker import Broker
from broker.core.model.profile import PROFILES
from broker.session.config import SessionConfig
from broker.session.handlers.connection import is_loopback
from protocol.connection import ConnectionState
from tests.component.harness import PROTOCOL_HEADER, Client, close_of
from tests.unit.core.fakes import ManualLoop


def _login(client: Client, user: str = "guest", password: str = "guest") -> None:
    client.feed(PROTOCOL_HEADER)
    client.send(
        0,
        commands.Connection.StartOk(
            client_properties={"capabilities": {"authentication_failure_close": True}},
            mechanism="PLAIN",
            response=f"\0{user}\0{password}",
        ),
    )


@pytest.mark.parametrize("peer", ["127.0.0.1:4000", "127.8.9.1:4000", "::1:4000", "::ffff:127.0.0.1:4000"])
def test_guest_logs_in_from_loopback(peer: str) -> None:
    client = Client(peer=peer)
    _login(client)
    assert client.session.state is ConnectionState.AWAITING_TUNE_OK


@pytest.mark.parametrize("peer", ["192.0.2.10:4000", "fd00::2:4000", "::ffff:192.0.2.10:4000"])
def test_guest_from_elsewhere_is_refused_as_a_failed_login(peer: str) -> None:
    client = Client(peer=peer)
    _login(client)
    assert close_of(client.received()) == (
        0,
        403,
        "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
        "For details see the broker logfile.",
    )


def test_loopback_users_is_configurable() -> None:
    anywhere = Client(config=SessionConfig(loopback_users=()), peer="192.0.2.10:4000")
    _login(anywhere)
    assert anywhere.session.state is ConnectionState.AWAITING_TUNE_OK
    client = Client(config=SessionConfig(loopback_users=("ops",)), peer="192.0.2.10:4000")
    client.broker.save_user("ops", password="pw")
    _login(client, "ops", "pw")
    assert close_of(client.received())[1] == 403


@pytest.mark.parametrize(("peer", "allowed"), [("127.0.0.1:4000", True), ("192.0.2.10:4000", False)])
def test_anonymous_is_guest_under_the_40_profile(peer: str, allowed: bool) -> None:
    # rabbit_auth_mechanism_anonymous logs in as anonymous_login_user (guest): loopback_users still applies.
    loop = ManualLoop()
    client = Client(Broker(loop.call_soon, profile=PROFILES["rabbitmq-4.0"]), loop=loop, peer=peer)
    client.feed(PROTOCOL_HEADER)
    caps: FieldTable = {"capabilities": {"authentication_failure_close": True}}
    start_ok = commands.Connection.StartOk(client_properties=caps, mechanism="ANONYMOUS", response="")
    client.send(0, start_ok)
    if allowed:
        assert (client.session.state, client.session.username) == (ConnectionState.AWAITING_TUNE_OK, "guest")
    else:
        assert close_of(client.received())[1:] == (
            403,
            "ACCESS_REFUSED - Login was refused using authentication mechanism ANONYMOUS. "
            "For details see the broker logfile.",
        )


def test_is_loopback_reads_the_servers_peer_text() -> None:
    assert is_loopback("127.0.0.1:1")
    assert is_loopback("::1:1")
    assert not is_loopback("10.0.0.1:1")
    assert not is_loopback("not-an-address:1")
