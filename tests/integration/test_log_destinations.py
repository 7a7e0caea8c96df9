"""Where `warrenmq serve` writes its log, as RabbitMQ does: with ``log.console = true`` in rabbitmq.conf and
RABBITMQ_LOG_BASE set (as CI fixtures and the rabbitmq image set them), to the console and to the file; and
``log.file.formatter = json`` gives the file JSON lines while the console keeps the plain ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pika

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 30.0


def _serve(tmp_path: Path, conf: str) -> tuple[subprocess.Popen[str], int, Path]:
    (tmp_path / "rabbitmq.conf").write_text(
        "listeners.tcp.default = 127.0.0.1:0\nmanagement.tcp.port = 0\n" + conf
    )
    env = {
        **os.environ,
        "RABBITMQ_CONFIG_FILE": str(tmp_path / "rabbitmq.conf"),
        "RABBITMQ_LOG_BASE": str(tmp_path / "log"),
        "RABBITMQ_NODENAME": "logdest@localhost",
        "HOME": str(tmp_path),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    return process, int(ready["amqp_port"]), tmp_path / "log" / "logdest@localhost.log"


def _poll(read: Callable[[], str], wanted: str) -> str:
    deadline = time.monotonic() + DEADLINE_S
    text = read()
    while wanted not in text and time.monotonic() < deadline:
        time.sleep(0.1)
        text = read()
    return text


def _connect_and_close(port: int) -> None:
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port, connection_attempts=1))
    connection.close()


def test_console_and_file_together(tmp_path: Path) -> None:
    process, port, log_file = _serve(tmp_path, "log.console = true\nsome_unknown.key = 1\n")
    try:
        _connect_and_close(port)
        file_text = _poll(
            lambda: log_file.read_text() if log_file.exists() else "", "closing AMQP connection"
        )
    finally:
        process.terminate()
        _, console = process.communicate(timeout=15)
    warning = "[warning] <0.9.0> " + f"{tmp_path}/rabbitmq.conf:4: unknown setting 'some_unknown.key' ignored"
    for text in (file_text, console):
        assert warning in text
        assert "[info] <warrenmq." in text
        assert "accepting AMQP connection <warrenmq." in text
        assert "closing AMQP connection <warrenmq." in text


def test_file_only_unless_the_console_is_asked_for(tmp_path: Path) -> None:
    process, port, log_file = _serve(tmp_path, "log.file.formatter = json\n")
    try:
        _connect_and_close(port)
        file_text = _poll(
            lambda: log_file.read_text() if log_file.exists() else "", "closing AMQP connection"
        )
    finally:
        process.terminate()
        _, console = process.communicate(timeout=15)
    assert "accepting AMQP connection" not in console
    records = [json.loads(line) for line in file_text.splitlines()]
    closing = next(r for r in records if r["event"].startswith("closing AMQP connection"))
    assert (closing["level"], closing["domain"], closing["user"], closing["vhost"]) == (
        "info",
        "rabbitmq.connection",
        "guest",
        "/",
    )
