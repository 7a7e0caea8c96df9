"""perf/amqp10_cost.py runs both AMQP 1.0 scenarios to the end with each of its clients (WarrenMQ only, small:
the RabbitMQ 4.0.5 side is the oracle the compat tests already start), so that a change to the codec or to
the AMQP 1.0 session cannot leave the benchmark broken unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 3000


@pytest.mark.parametrize("client", ["raw", "proton"])
def test_every_message_is_accepted_and_consumed(client: str, tmp_path: Path) -> None:
    raw = tmp_path / "runs.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "perf" / "amqp10_cost.py"),
            "--brokers=warrenmq",
            "--rounds=1",
            f"--messages={MESSAGES}",
            "--idle-s=0",
            f"--client={client}",
            f"--raw={raw}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = {run["scenario"]: run for run in map(json.loads, raw.read_text().splitlines())}
    assert set(runs) == {"pubsub", "publish"}
    for run in runs.values():
        assert run["error"] is None
        assert run["moved"] == MESSAGES
        assert run["refused"] == 0
        assert run["rate"] > 0
        assert run["broker_cpu_s"] > 0  # the broker's process was found and measured
    assert "| publish → consume, at least once |" in done.stdout
