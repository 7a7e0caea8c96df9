"""rabbit_definitions' log lines for an import (RabbitMQ 3.10, info): "Asked to import definitions. Acting
user: rmq-internal" (3.10 names its internal user whoever asked: a file at boot, rabbitmqctl
import_definitions or POST /api/definitions), then "Importing concurrently 2 queues..." per category that has
items, in its import order and with its way of importing each (concurrent_for_all / sequential_for_all)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

log = structlog.get_logger("warrenmq.definitions")

# apply_defs/3's order; True: concurrent_for_all, False: sequential_for_all; the name as logged.
CATEGORIES = (
    ("users", True, "users"),
    ("vhosts", True, "vhosts"),
    ("permissions", True, "permissions"),
    ("topic_permissions", True, "topic permissions"),
    ("exchanges", True, "exchanges"),
    ("global_parameters", False, "global runtime parameters"),
    ("policies", False, "policies"),
    ("parameters", False, "runtime parameters"),
    ("queues", True, "queues"),
    ("bindings", True, "bindings"),
)


def asked_to_import(data: Mapping[str, Any]) -> None:
    log.info("Asked to import definitions. Acting user: rmq-internal", domain="rabbitmq")
    for key, concurrent, name in CATEGORIES:
        items = data.get(key)
        if isinstance(items, list) and items:
            how = "concurrently" if concurrent else "sequentially"
            log.info(f"Importing {how} {len(items)} {name}...", domain="rabbitmq", category=key)
