"""The RabbitMQ Java client (the version tests/compat/clients/java/pom.xml pins) fails over across a WarrenMQ
high-availability pair: ``ConnectionFactory.newConnection(List<Address>)`` lists both nodes, automatic and
topology recovery are on, and the active node is killed with SIGKILL while the client publishes with confirms
and consumes with acks (tests/ha/java/HaFailover.java). The publisher and the consumer each recover onto the
node that took over; nothing confirmed is lost, nothing unpublished arrives, what the consumer held unacked
comes back with redelivered=true, and a message delivered twice without the flag is only one its publisher
sent twice."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.compat.clients.build_jvm import build_java_ha_failover
from tests.ha.nodes import HANode

LEASE_S = 3.0
MESSAGES, KILL_AFTER, HELD = 600, 200, 20


def _lines(process: subprocess.Popen[str], into: queue.Queue[dict[str, Any]]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("{"):
            into.put(json.loads(line))
    into.put({"event": "exited"})


def _next(events: queue.Queue[dict[str, Any]], timeout_s: float, stderr: Path) -> dict[str, Any]:
    try:
        event = events.get(timeout=timeout_s)
    except queue.Empty:
        said = stderr.read_text()[-3000:]
        raise AssertionError(f"the Java program said nothing for {timeout_s} s: {said}") from None
    if event["event"] in ("exited", "error"):
        raise AssertionError(f"the Java program ended early ({event}): {stderr.read_text()[-3000:]}")
    return event


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_java_client_recovers_onto_the_node_that_took_over(postgres_dsn: str, tmp_path: Path) -> None:
    command = build_java_ha_failover()
    active, standby = (HANode(name, postgres_dsn, tmp_path, LEASE_S) for name in ("alpha", "beta"))
    stderr = tmp_path / "java.stderr"
    process: subprocess.Popen[str] | None = None
    try:
        active.start()
        active.wait_event("ready")
        standby.start()
        standby.wait_event("standby")
        addresses = ",".join(f"127.0.0.1:{node.amqp_port}" for node in (active, standby))
        with stderr.open("w") as sink:
            process = subprocess.Popen(
                [*command, addresses, str(MESSAGES), str(KILL_AFTER), str(HELD)],
                stdout=subprocess.PIPE, stderr=sink, text=True, bufsize=1,
            )  # fmt: skip
        events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=_lines, args=(process, events), daemon=True).start()
        assert _next(events, 120, stderr)["event"] == "kill"
        killed_at = time.monotonic()
        active.kill()
        standby.wait_event("ready", timeout_s=LEASE_S + 30)
        took_over_s = time.monotonic() - killed_at
        result = _next(events, 180, stderr)
        assert process.wait(30) == 0, stderr.read_text()[-3000:]
    finally:
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        for node in (active, standby):
            node.stop()
    assert result["event"] == "result"
    assert result["confirmed"] == MESSAGES
    assert result["missing"] == [], f"confirmed but never delivered: {result['missing'][:20]}"
    assert result["never_published"] == []
    assert result["unflagged_duplicates"] == []
    assert result["held_not_redelivered"] == []
    assert result["redelivered"] >= HELD
    # Both connections started on the first node and recovered onto the second.
    assert result["port_before"] == active.amqp_port
    assert result["port_after"] == result["consumer_port_after"] == standby.amqp_port
    assert result["publisher_recoveries"] >= 1
    assert result["consumer_recoveries"] >= 1
    assert result["failed_attempts"] >= 1  # the kill landed between a publish and its confirm, or before one
    print(
        f"\nJava client failover: standby ready {took_over_s:.1f} s after SIGKILL, first confirm on it "
        f"{result['failover_ms'] / 1000:.1f} s after the kill line; {result['confirmed']} confirmed, "
        f"{result['redelivered']} redelivered, {result['failed_attempts']} publishes sent again"
    )
