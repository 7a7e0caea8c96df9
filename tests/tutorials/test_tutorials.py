"""RabbitMQ's six Python tutorials, run unchanged (programs/) against the broker under test, with the output
the tutorials promise. https://www.rabbitmq.com/tutorials"""

from __future__ import annotations

from typing import Any

import pika

from .conftest import RunProgram, collect_until, wait_for_consumers


def test_one_hello_world(admin: Any, run_tutorial: RunProgram) -> None:
    receiver = run_tutorial("receive.py")
    receiver.wait_for(" [*] Waiting for messages. To exit press CTRL+C")
    sender = run_tutorial("send.py")
    assert sender.finish() == 0
    assert sender.lines == [" [x] Sent 'Hello World!'"]
    receiver.wait_for(" [x] Received Hello World!")
    assert receiver.interrupt() == 0
    assert receiver.lines == [
        " [*] Waiting for messages. To exit press CTRL+C",
        " [x] Received Hello World!",
        "Interrupted",
    ]


def test_one_hello_world_message_waits_for_a_late_receiver(admin: Any, run_tutorial: RunProgram) -> None:
    sender = run_tutorial("send.py")
    assert sender.finish() == 0
    receiver = run_tutorial("receive.py")
    receiver.wait_for(" [x] Received Hello World!")
    assert receiver.interrupt() == 0


def test_two_work_queues(admin: pika.BlockingConnection, run_tutorial: RunProgram) -> None:
    workers = [run_tutorial("worker.py") for _ in range(2)]
    for worker in workers:
        worker.wait_for(" [*] Waiting for messages. To exit press CTRL+C")
    wait_for_consumers(admin, "task_queue", 2)
    tasks = ["First message.", "Second message", "Third message", "Fourth message."]  # a dot = 1 s of work
    for task in tasks:
        new_task = run_tutorial("new_task.py", *task.split())
        assert new_task.finish() == 0
        assert new_task.lines == [f" [x] Sent {task}"]

    def lines(prefix: str) -> list[str]:
        return [line.removeprefix(prefix) for w in workers for line in w.lines if line.startswith(prefix)]

    collect_until(workers, lambda: len(lines(" [x] Done")) == len(tasks), "every task to be done")
    assert sorted(lines(" [x] Received ")) == sorted(tasks)  # every task exactly once
    # prefetch_count=1 spreads the work: the worker busy with "First message." cannot take all the rest.
    assert all(any(line.startswith(" [x] Received ") for line in w.lines) for w in workers)
    ok = admin.channel().queue_declare("task_queue", passive=True).method
    assert ok.message_count == 0


def test_three_publish_subscribe(admin: Any, run_tutorial: RunProgram) -> None:
    receivers = [run_tutorial("receive_logs.py") for _ in range(2)]
    for receiver in receivers:
        receiver.wait_for(" [*] Waiting for logs. To exit press CTRL+C")
    emitter = run_tutorial("emit_log.py")
    assert emitter.finish() == 0
    assert emitter.lines == [" [x] Sent info: Hello World!"]
    emitter = run_tutorial("emit_log.py", "warning:", "disk", "almost", "full")
    assert emitter.finish() == 0
    for receiver in receivers:
        receiver.wait_for(" [x] b'info: Hello World!'")
        receiver.wait_for(" [x] b'warning: disk almost full'")


def test_four_routing(admin: Any, run_tutorial: RunProgram) -> None:
    to_file = run_tutorial("receive_logs_direct.py", "warning", "error")
    to_screen = run_tutorial("receive_logs_direct.py", "info", "warning", "error")
    for receiver in (to_file, to_screen):
        receiver.wait_for(" [*] Waiting for logs. To exit press CTRL+C")
    emitted = [
        ("error", "Run. Run. Or it will explode."),
        ("info", "just so you know"),
        ("debug", "nobody listens"),
        ("warning", "last one"),
    ]
    for severity, message in emitted:
        emitter = run_tutorial("emit_log_direct.py", severity, message)
        assert emitter.finish() == 0
        assert emitter.lines == [f" [x] Sent {severity}:{message}"]
    to_screen.wait_for(" [x] warning:b'last one'")
    to_file.wait_for(" [x] warning:b'last one'")
    # Per queue, messages arrive in publish order: anything wrongly routed would precede "last one".
    assert [line for line in to_screen.lines if line.startswith(" [x]")] == [
        " [x] error:b'Run. Run. Or it will explode.'",
        " [x] info:b'just so you know'",
        " [x] warning:b'last one'",
    ]
    assert [line for line in to_file.lines if line.startswith(" [x]")] == [
        " [x] error:b'Run. Run. Or it will explode.'",
        " [x] warning:b'last one'",
    ]


def test_four_routing_usage_without_severities(run_tutorial: RunProgram) -> None:
    receiver = run_tutorial("receive_logs_direct.py")
    assert receiver.finish() == 1
    assert receiver.lines[-1].startswith("Usage: ")


def test_five_topics(admin: Any, run_tutorial: RunProgram) -> None:
    everything = run_tutorial("receive_logs_topic.py", "#")
    kern = run_tutorial("receive_logs_topic.py", "kern.*")
    critical = run_tutorial("receive_logs_topic.py", "*.critical")
    kern_and_critical = run_tutorial("receive_logs_topic.py", "kern.*", "*.critical")
    receivers = [everything, kern, critical, kern_and_critical]
    for receiver in receivers:
        receiver.wait_for(" [*] Waiting for logs. To exit press CTRL+C")
    sent = [
        ("kern.critical", "A critical kernel error"),
        ("kern.info", "kernel info"),
        ("auth.critical", "auth failed"),
        ("cron.info", "cron ran"),
    ]
    for key, message in sent:
        emitter = run_tutorial("emit_log_topic.py", key, message)
        assert emitter.finish() == 0
        assert emitter.lines == [f" [x] Sent {key}:{message}"]
    emitter = run_tutorial("emit_log_topic.py")  # no arguments: the default key and message
    assert emitter.finish() == 0
    assert emitter.lines == [" [x] Sent anonymous.info:Hello World!"]
    sentinel = ("kern.critical", "the end")  # matches every receiver, and comes last in every queue
    assert run_tutorial("emit_log_topic.py", *sentinel).finish() == 0
    expected = [
        [*sent, ("anonymous.info", "Hello World!"), sentinel],
        [sent[0], sent[1], sentinel],
        [sent[0], sent[2], sentinel],
        [sent[0], sent[1], sent[2], sentinel],
    ]
    for receiver, want in zip(receivers, expected, strict=True):
        receiver.wait_for(" [x] kern.critical:the end")
        assert receiver.interrupt() == 0
        assert [line for line in receiver.lines if line.startswith(" [x] ")] == [
            f" [x] {k}:{m}" for k, m in want
        ]
        assert receiver.lines[-1] == "Interrupted"


def test_six_rpc(admin: Any, run_tutorial: RunProgram) -> None:
    server = run_tutorial("rpc_server.py")
    server.wait_for(" [x] Awaiting RPC requests")
    client = run_tutorial("rpc_client.py")
    assert client.finish() == 0
    assert client.lines == [" [x] Requesting fib(30)", " [.] Got 832040"]
    server.wait_for(" [.] fib(30)")


def test_six_rpc_request_waits_for_a_late_server(
    admin: pika.BlockingConnection, run_tutorial: RunProgram
) -> None:
    server = run_tutorial("rpc_server.py")
    server.wait_for(" [x] Awaiting RPC requests")
    server.kill()  # rpc_queue now exists (durable) with no consumer
    wait_for_consumers(admin, "rpc_queue", 0)
    client = run_tutorial("rpc_client.py")
    client.wait_for(" [x] Requesting fib(30)")
    late_server = run_tutorial("rpc_server.py")
    assert client.finish() == 0
    assert client.lines[-1] == " [.] Got 832040"
    late_server.wait_for(" [.] fib(30)")
