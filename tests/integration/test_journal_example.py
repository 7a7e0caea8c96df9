"""The worked journal example of docs/analytics.md, without Spark: examples/journal_traffic.py against a
broker with the journal on, and the compact rows it leaves are the deliveries the topology implies."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.conftest import start_broker_process

ROOT = Path(__file__).resolve().parents[2]


def _overview(port: int | None) -> Any:
    auth = "Basic " + base64.b64encode(b"guest:guest").decode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/overview", headers={"Authorization": auth})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def _expected(published: int) -> tuple[int, int]:
    """(deliveries, unroutable) for the example's pattern: every 50th message goes nowhere, the others rotate
    over direct (1 queue), topic (2 queues: orders.# and *.eu.*) and fanout (3 queues)."""
    deliveries = unroutable = 0
    for n in range(published):
        if n % 50 == 49:
            unroutable += 1
        else:
            deliveries += (1, 2, 3)[n % 3]
    return deliveries, unroutable


def test_the_example_traffic_lands_in_the_journal_as_one_row_per_delivery(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    broker = start_broker_process("--journal-dir", str(journal), "--journal-mode", "compact")
    try:
        overview = _overview(broker.management_port)["journal"]
        native = os.environ.get("WARRENMQ_JOURNAL_NATIVE") != "0"
        assert (overview["mode"], overview["native_lane"], overview["batches_dropped"]) == (
            "compact",
            native,
            0,
        )
        result = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "journal_traffic.py"), "--url", broker.url,
             "--seconds", "1", "--rate", "400"],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
    finally:
        assert broker.stop() == 0  # the journal completes its files at shutdown
    words = result.stdout.split()
    published, acked = int(words[1].rstrip(",")), int(words[3])
    deliveries, unroutable = _expected(published)
    assert published >= 300
    assert acked == deliveries
    rows = pq.read_table(journal / "deliveries").to_pylist()
    outcomes = Counter(row["outcome"] for row in rows)
    assert outcomes["ack"] == deliveries
    assert outcomes["unroutable"] + outcomes["returned"] == unroutable
    by_exchange = Counter(row["exchange"] for row in rows if row["outcome"] == "ack")
    assert by_exchange["shop.topic"] == 2 * len(
        {row["msg_seq"] for row in rows if row["exchange"] == "shop.topic"}
    )
