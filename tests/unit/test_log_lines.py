"""The plain renderer writes RabbitMQ's line shape, and the alarm lines carry RabbitMQ's texts and levels
(tests/compat/test_log_lines.py compares the connection lines with RabbitMQ's own log)."""

from __future__ import annotations

from structlog.testing import capture_logs

from broker.config.model import Watermark
from broker.core.model.clock import ManualClock
from broker.log_setup import plain_line
from broker.server.alarms import AlarmSources, ResourceAlarms


def test_a_multi_line_message_repeats_the_prefix_and_rabbitmq_lines_hide_their_fields() -> None:
    event = {
        "event": "closing AMQP connection <w.1.0> (a -> b):\nclient unexpectedly closed TCP connection",
        "level": "warning",
        "timestamp": "2026-01-02T03:04:05.678901Z",
        "pid": "<w.1.0>",
        "domain": "rabbitmq.connection",
        "user": "guest",
    }
    assert plain_line(event).splitlines() == [
        "2026-01-02 03:04:05.678901+00:00 [warning] <w.1.0> closing AMQP connection <w.1.0> (a -> b):",
        "2026-01-02 03:04:05.678901+00:00 [warning] <w.1.0> client unexpectedly closed TCP connection",
    ]
    own = {"event": "listening", "level": "info", "timestamp": "2026-01-02T03:04:05.678901Z", "port": 5672}
    assert plain_line(own) == "2026-01-02 03:04:05.678901+00:00 [info] <0.9.0> listening port=5672"


def test_memory_alarm_lines_as_rabbit_alarm_writes_them() -> None:
    used = [10]
    alarms = ResourceAlarms(
        ManualClock(),
        Watermark("absolute", 100),
        Watermark("absolute", 0),
        None,
        lambda reasons: None,
        AlarmSources(rss_bytes=lambda: used[0]),
        node_name="warrenmq-1@localhost",
    )
    used[0] = 500
    with capture_logs() as set_logs:
        alarms.sample_memory()
    used[0] = 10
    with capture_logs() as cleared_logs:
        alarms.sample_memory()
    assert [(e["log_level"], e["event"].split("\n")[0]) for e in set_logs] == [
        ("info", "vm_memory_high_watermark set. Memory used:500 allowed:100"),
        ("warning", "memory resource limit alarm set on node 'warrenmq-1@localhost'."),
    ]
    assert "*** Publishers will be blocked until this alarm clears ***" in set_logs[1]["event"]
    assert [(e["log_level"], e["event"]) for e in cleared_logs] == [
        ("info", "vm_memory_high_watermark clear. Memory used:10 allowed:100"),
        ("warning", "memory resource limit alarm cleared on node 'warrenmq-1@localhost'"),
        ("warning", "memory resource limit alarm cleared across the cluster"),
    ]
