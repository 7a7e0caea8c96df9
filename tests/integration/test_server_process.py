"""The `warrenmq serve` process: readiness line, configuration, SIGTERM → clients get 320, exit 0."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pika
import pytest

from broker.config import add_serve_arguments, config_from_args
from tests.conftest import BrokerProcess
from tests.ports import free_port

Factory = Callable[..., BrokerProcess]


def test_sigterm_closes_clients_with_320_and_exits_zero(broker_factory: Factory) -> None:
    broker = broker_factory()
    connection = pika.BlockingConnection(pika.URLParameters(broker.url))
    channel = connection.channel()
    broker.process.send_signal(signal.SIGTERM)
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as caught:
        _process_until_closed(connection)
    assert not channel.is_open
    assert caught.value.reply_code == 320
    assert (
        caught.value.reply_text
        == "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"
    )
    assert broker.process.wait(timeout=10) == 0


def _process_until_closed(connection: pika.BlockingConnection) -> None:
    for _ in range(100):
        connection.process_data_events(time_limit=0.1)


def test_sigint_also_stops_cleanly(broker_factory: Factory) -> None:
    broker = broker_factory()
    assert broker.stop(signal.SIGINT) == 0


def test_custom_users_and_vhosts(broker_factory: Factory) -> None:
    broker = broker_factory("--user", "alice:s3cret", "--vhost", "/", "--vhost", "tenant")
    params = pika.ConnectionParameters(
        broker.host, broker.port, "tenant", pika.PlainCredentials("alice", "s3cret")
    )
    connection = pika.BlockingConnection(params)
    assert connection.is_open
    connection.close()
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(pika.ConnectionParameters(broker.host, broker.port))


def test_negotiated_tune_values_follow_the_flags(broker_factory: Factory) -> None:
    broker = broker_factory("--frame-max", "8192", "--channel-max", "16", "--heartbeat", "30")
    connection = pika.BlockingConnection(pika.URLParameters(broker.url))
    params = connection._impl.params
    assert (params.frame_max, params.channel_max, params.heartbeat) == (8192, 16, 30)
    connection.close()


def test_readiness_line_is_one_json_object_with_the_bound_port_then_rabbitmqs_startup_line() -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--management-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        assert ready["event"] == "ready"
        assert ready["amqp_host"] == "127.0.0.1"
        assert ready["amqp_port"] > 0
        assert ready["url"] == f"amqp://127.0.0.1:{ready['amqp_port']}/"
        # What Testcontainers' RabbitMQ modules wait for; every listener accepts by now.
        startup = process.stdout.readline()
        assert startup.rstrip().endswith("[info] <0.9.0> Server startup complete; 9 plugins started.")
        socket.create_connection(("127.0.0.1", ready["management_port"]), timeout=5).close()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_port_in_use_is_a_clear_error_and_exit_1(broker_factory: Factory) -> None:
    broker = broker_factory()
    result = subprocess.run(
        [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", str(broker.port)],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{broker.port}" in result.stderr


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
def test_a_clash_on_the_dual_stack_address_prints_it_as_rabbitmq_does() -> None:
    """The default listener `::` is printed `[::]:PORT`, as RabbitMQ prints its listeners, not `:::PORT`."""
    holder = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    holder.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    port = free_port()
    holder.bind(("::", port))
    holder.listen()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "broker", "serve", "--host", "::", "--port", str(port),
             "--data-dir", "none", "--management-port", "-1", "--prometheus-port", "-1"],
            capture_output=True, text=True, timeout=20, check=False,
        )  # fmt: skip
    finally:
        holder.close()
    assert result.returncode == 1
    assert f"warrenmq: cannot listen on [::]:{port}: " in result.stderr, result.stderr


def _parse(argv: list[str]) -> Any:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def test_environment_variables_configure_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARRENMQ_PORT", "5999")
    monkeypatch.setenv("WARRENMQ_USERS", "a:1,b:2")
    monkeypatch.setenv("WARRENMQ_HEARTBEAT", "0")
    config = _parse([])
    assert (config.port, dict(config.users), config.session.heartbeat_s) == (5999, {"a": "1", "b": "2"}, 0)
    assert _parse(["--port", "1234"]).port == 1234


def test_defaults_match_rabbitmq(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PORT", "USERS", "HEARTBEAT", "HOST", "FRAME_MAX", "CHANNEL_MAX", "VHOSTS"):
        monkeypatch.delenv(f"WARRENMQ_{name}", raising=False)
    config = _parse([])
    assert (config.host, config.port, dict(config.users), config.vhosts) == (
        "::",
        5672,
        {"guest": "guest"},
        ("/",),
    )
    assert (config.session.frame_max, config.session.channel_max, config.session.heartbeat_s) == (
        131072,
        2047,
        60,
    )


@pytest.mark.parametrize("argv", [["--frame-max", "100"], ["--channel-max", "0"], ["--user", "nopassword"]])
def test_invalid_settings_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        _parse(argv)


def test_an_unusable_data_directory_is_reported_as_such(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    env = {key: value for key, value in os.environ.items() if key != "WARRENMQ_DATA_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0"],
        env={**env, "RABBITMQ_MNESIA_BASE": str(blocker), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    # The pid file ($RABBITMQ_MNESIA_DIR.pid) is made first: its directory cannot be created.
    assert done.stderr.strip().splitlines()[-1] == f"warrenmq: {blocker}: File exists"
