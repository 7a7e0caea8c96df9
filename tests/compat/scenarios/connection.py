"""Connection-level behaviour: negotiation of frame_max / channel_max / heartbeat, hard errors, auth."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions

from .kit import Ctx, Observation, outcome, scenario


@scenario
def connection_level_errors(ctx: Ctx) -> Observation:
    results: dict[str, Any] = {}
    results["flow-false"] = outcome(lambda: ctx.connect().channel().flow(False))
    results["prefetch-size"] = outcome(lambda: ctx.connect().channel().basic_qos(prefetch_size=10))
    results["recover-false"] = outcome(lambda: ctx.connect().channel().basic_recover(requeue=False))
    results["wrong-password"] = outcome(
        lambda: ctx.connect(credentials=pika.PlainCredentials("guest", "nope"))
    )
    results["unknown-vhost"] = outcome(lambda: ctx.connect(virtual_host="nope"))
    survivor = ctx.connect()
    results["others-unaffected"] = survivor.channel().queue_declare("", exclusive=True).method.queue
    return results


@scenario
def negotiation(ctx: Ctx) -> Observation:
    default = ctx.connect()
    small = ctx.connect(frame_max=8192, channel_max=32, heartbeat=15)
    caps = default._impl.server_properties["capabilities"]
    return {
        "default": [
            default._impl.params.frame_max,
            default._impl.params.channel_max,
            default._impl.params.heartbeat,
        ],
        "small": [small._impl.params.frame_max, small._impl.params.channel_max, small._impl.params.heartbeat],
        "capabilities": caps,
    }
