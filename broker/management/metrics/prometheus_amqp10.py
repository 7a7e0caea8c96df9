"""The ``protocol="amqp10"`` rows of rabbitmq_global_* (rabbit_global_counters), as RabbitMQ 4.0.5's
/metrics shows them beside AMQP 0-9-1's under the profiles that serve AMQP 1.0 (checked against it in
tests/compat/test_amqp10_observability.py): publishers and consumers are the open sender and receiver
links; received, received_confirm, routed, unroutable dropped / returned and confirmed count 1.0 publishes;
per queue type, delivered, redelivered and acknowledged count 1.0 deliveries. 4.0.5 counts no 1.0 delivery
as consume_manual_ack or consume_auto_ack (nor any get): those rows stay 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from broker.core.model.protocol_counters import ACK, DELIVER, DELIVER_NO_ACK, REDELIVER
from broker.management.stats import live

if TYPE_CHECKING:
    from broker.core.model.protocol_counters import ProtocolCounters

Samples = dict[str, list[tuple[dict[str, str], float]]]

AMQP10: Final = {"protocol": "amqp10"}


def amqp10_samples(
    counters: ProtocolCounters, connections: list[Any], queue_types: dict[str, str], out: Samples
) -> None:
    """Append the amqp10 rows (after the amqp091 ones, as 4.0.5 orders them). ``queue_types`` maps the
    management's queue type names to rabbit_global_counters' (classic -> rabbit_classic_queue)."""
    receivers = senders = 0
    for protocol in connections:
        receivers += len(live.amqp10_receivers(protocol))
        senders += len(live.amqp10_senders(protocol))
    out["global_consumers"].append((AMQP10, float(receivers)))
    out["global_publishers"].append((AMQP10, float(senders)))
    for name, value in (
        ("global_messages_received_total", counters.received),
        ("global_messages_received_confirm_total", counters.received_confirm),
        ("global_messages_routed_total", counters.routed),
        ("global_messages_unroutable_dropped_total", counters.unroutable_dropped),
        ("global_messages_unroutable_returned_total", counters.unroutable_returned),
        ("global_messages_confirmed_total", counters.confirmed),
    ):
        out[name].append((AMQP10, float(value)))
    for kind, counter_name in queue_types.items():
        labels = {"protocol": "amqp10", "queue_type": counter_name}
        delivered = counters.count(kind, DELIVER) + counters.count(kind, DELIVER_NO_ACK)
        for name, value in (
            ("global_messages_acknowledged_total", counters.count(kind, ACK)),
            ("global_messages_delivered_consume_auto_ack_total", 0),
            ("global_messages_delivered_consume_manual_ack_total", 0),
            ("global_messages_delivered_get_auto_ack_total", 0),
            ("global_messages_delivered_get_manual_ack_total", 0),
            ("global_messages_delivered_total", delivered),
            ("global_messages_get_empty_total", 0),
            ("global_messages_redelivered_total", counters.count(kind, REDELIVER)),
        ):
            out[name].append((labels, float(value)))


def amqp10_share(counters: ProtocolCounters, kind: str) -> dict[str, int]:
    """What 1.0 sessions added to the queues' own counters of queue type ``kind`` (deliveries and
    acknowledgements), which the amqp091 rows leave out."""
    return {
        "deliver": counters.count(kind, DELIVER),
        "deliver_no_ack": counters.count(kind, DELIVER_NO_ACK),
        "ack": counters.count(kind, ACK),
    }
