"""Raw scenarios for the methods the class-by-class scenarios (scenarios_methods) leave out:
basic.recover-async.

connection.secure is not among them: RabbitMQ sends it only for a mechanism with a challenge, and neither
mechanism WarrenMQ (or the oracle's default configuration) offers has one: PLAIN and AMQPLAIN take the whole
response in connection.start-ok (rabbit_auth_mechanism_plain / _amqplain answer {ok, User} at once), so the
oracle never sends connection.secure to a client it could also send to WarrenMQ's.

connection.blocked / unblocked have no raw scenario yet: the oracle can raise and clear a memory alarm at run
time (rabbitmqctl set_vm_memory_high_watermark), but WarrenMQ reads its watermark only at start, so clearing
the alarm there means freeing memory as tests/hardening/test_alarms.py does (a flood, then a purge): neither
quick nor step-exact.
"""

from __future__ import annotations

from collections.abc import Callable

from pamqp import commands as c

from .raw import RawClient, method, publish
from .raw_table import raw_scenario

Open = Callable[[], RawClient]


@raw_scenario
def basic_recover_async(open_client: Open, prefix: str) -> None:
    """basic.recover-async (60/100, deprecated in 0-9-1): with requeue=true RabbitMQ 3.10 requeues the
    channel's unacknowledged messages and sends no reply (only the redeliveries, redelivered=1); requeue=false
    is a 540 connection.close, "NOT_IMPLEMENTED - requeue=false", naming 60/100."""
    client = open_client()
    client.handshake()
    client.open_channel(1)
    q = f"{prefix}-q"
    client.step(method(1, c.Queue.Declare(queue=q, exclusive=True)), until=["Queue.DeclareOk"])
    client.step(publish(1, "", q, b"a") + publish(1, "", q, b"b"))
    client.step(method(1, c.Basic.Consume(queue=q, consumer_tag="t1")), until=["Basic.Deliver"], count=2)
    client.step(method(1, c.Basic.RecoverAsync(requeue=True)), until=["Basic.Deliver"], count=2, settle_s=0.3)
    client.step(method(1, c.Basic.Ack(delivery_tag=0, multiple=True)))
    client.step(method(1, c.Basic.Cancel(consumer_tag="t1")), until=["Basic.CancelOk"])
    client.step(method(1, c.Basic.Get(queue=q)), until=["Basic.GetEmpty"])
    client.step(
        method(1, c.Basic.RecoverAsync(requeue=False)), until_any=["Channel.Close", "Connection.Close"]
    )
    client.step(method(0, c.Connection.CloseOk()), closed=True, timeout_s=1.0)
