"""Fixtures for the tutorial suite: run tutorial programs through shim.py and watch their output."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.conftest import url_pika_params

HERE = Path(__file__).parent
PROGRAMS = HERE / "programs"
SHIM = HERE / "shim.py"
TIMEOUT_S = 15.0


class Program:
    """A tutorial program running in a child process; its stdout+stderr lines are collected by a thread."""

    def __init__(self, url: str, name: str, *args: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.process = subprocess.Popen(
            [sys.executable, "-u", str(SHIM), str(PROGRAMS / name), *args],
            cwd=PROGRAMS,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "WARRENMQ_TUTORIAL_URL": url, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def collect(self, timeout_s: float) -> bool:
        """Move one line into ``lines``; False at EOF or timeout."""
        try:
            line = self._queue.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return False
        if line is None:
            self._queue.put(None)
            return False
        self.lines.append(line)
        return True

    def wait_for(self, line: str, timeout_s: float = TIMEOUT_S) -> None:
        """Wait until the program has printed exactly ``line``."""
        deadline = time.monotonic() + timeout_s
        while line not in self.lines:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (not self.collect(remaining) and self.process.poll() is not None):
                if line in self.lines:
                    return
                raise AssertionError(f"{self.name} did not print {line!r}; output so far: {self.lines!r}")

    def wait_for_count(self, pattern: str, count: int, timeout_s: float = TIMEOUT_S) -> list[str]:
        """Wait until ``count`` lines match the regular expression ``pattern``; returns them."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        while True:
            matching = [line for line in self.lines if regex.fullmatch(line)]
            if len(matching) >= count:
                return matching
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (not self.collect(remaining) and self.process.poll() is not None):
                raise AssertionError(
                    f"{self.name}: {len(matching)} of {count} lines matching {pattern!r}; "
                    f"output: {self.lines!r}"
                )

    def finish(self, timeout_s: float = TIMEOUT_S) -> int:
        """Wait for the program to exit by itself; returns its exit code with all output collected."""
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not exit; output: {self.lines!r}") from None
        self._drain()
        return code

    def interrupt(self, timeout_s: float = TIMEOUT_S) -> int:
        """Press CTRL+C (SIGINT), as the tutorials suggest; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.finish(timeout_s)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def _drain(self) -> None:
        self._reader.join(timeout=TIMEOUT_S)
        while self.collect(0):
            pass


RunProgram = Callable[..., Program]


def collect_until(
    programs: list[Program], done: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S
) -> None:
    """Gather the output of several programs until ``done()`` holds, or fail at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}; output: {[p.lines for p in programs]!r}")
        for program in programs:
            program.collect(0.01)


@pytest.fixture
def run_tutorial(amqp_url: str) -> Iterator[RunProgram]:
    """Start tutorial programs (``run_tutorial("send.py", *args)``); those still running are killed after."""
    started: list[Program] = []

    def start(name: str, *args: str) -> Program:
        program = Program(amqp_url, name, *args)
        started.append(program)
        return program

    yield start
    for program in started:
        program.kill()


@pytest.fixture
def admin(amqp_url: str) -> Iterator[Any]:
    """A pika connection for the test; deletes the tutorials' fixed-name queues/exchanges before and after."""
    connection = pika.BlockingConnection(url_pika_params(amqp_url))

    def clean() -> None:
        for name in ("hello", "task_queue", "rpc_queue"):
            connection.channel().queue_delete(name)
        for name in ("logs", "direct_logs", "topic_logs"):
            connection.channel().exchange_delete(name)

    clean()
    try:
        yield connection
    finally:
        if connection.is_open:
            clean()
            connection.close()


def wait_for_consumers(connection: Any, queue_name: str, count: int, timeout_s: float = TIMEOUT_S) -> None:
    """Poll queue.declare-ok's consumer_count (passive) until the queue exists with ``count`` consumers."""
    deadline = time.monotonic() + timeout_s
    seen = "no queue"
    while time.monotonic() < deadline:
        channel = connection.channel()
        try:
            consumers = channel.queue_declare(queue_name, passive=True).method.consumer_count
        except pika.exceptions.ChannelClosedByBroker:
            pass  # not declared yet
        else:
            channel.close()
            seen = f"{consumers} consumers"
            if consumers >= count:
                return
        time.sleep(0.02)
    raise AssertionError(f"{queue_name} did not get {count} consumers in {timeout_s}s ({seen})")
