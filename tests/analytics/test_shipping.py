"""What the driver ships to executors (the project's zip) and the replay memo, without Spark."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

import broker
from broker.analytics.jobs.replay import Replayer
from broker.analytics.pyfiles import project_zip, source_root
from broker.core.topology.definitions import load_definitions
from tests.analytics.traffic import definitions


def test_the_project_zip_is_built_once_per_content_and_imports_on_its_own(tmp_path: Path) -> None:
    first = project_zip(into=tmp_path)
    built = first.stat().st_mtime_ns
    assert first.name.startswith(f"warrenmq-{broker.__version__}-")
    assert project_zip(into=tmp_path) == first
    assert first.stat().st_mtime_ns == built
    with zipfile.ZipFile(first) as archive:
        names = set(archive.namelist())
    assert {
        "broker/core/topology/definitions.py",
        "protocol/errors.py",
        "broker/analytics/jobs/replay.py",
    } <= names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".so")]
    # -I -S: neither the checkout nor site-packages on the path; only the zip can provide broker.core.
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import broker.core.topology.definitions as d; "
        "print(d.__file__)"
    )
    command = [sys.executable, "-I", "-S", "-c", probe, str(first)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.strip() == str(first / "broker" / "core" / "topology" / "definitions.py")


def test_an_edited_source_gets_a_new_zip(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    for package in ("broker", "protocol"):
        for path in (source_root() / package).rglob("*.py"):
            target = copy / path.relative_to(source_root())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    before = project_zip(copy, into=tmp_path / "cache")
    (copy / "broker" / "core" / "topology" / "definitions.py").write_text("# edited\n", encoding="utf-8")
    after = project_zip(copy, into=tmp_path / "cache")
    assert after != before
    with zipfile.ZipFile(after) as archive:
        assert archive.read("broker/core/topology/definitions.py") == b"# edited\n"


@pytest.mark.parametrize("memo_limit", [1, 3, 10_000])
def test_the_replay_memo_never_changes_an_answer(memo_limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    topology_a = load_definitions(definitions(eu_binding=True, plain_ae=False))
    topology_b = load_definitions(definitions(eu_binding=False, plain_ae=True))
    keys = ["eu.order", "us.order", "eu.order", "k", "eu.x", "us.order", "eu.order"]
    exchanges = ["orders", "orders", "orders", "plain", "orders", "orders", "orders"]
    batch = pa.RecordBatch.from_pydict(
        {
            "node": ["n"] * len(keys), "msg_seq": list(range(len(keys))), "vhost": ["/"] * len(keys),
            "exchange": exchanges, "routing_key": keys, "headers_json": [None] * len(keys),
            "queues": [None] * len(keys),
        }
    )  # fmt: skip
    monkeypatch.setattr(Replayer, "MEMO_LIMIT", memo_limit)
    replayer = Replayer(topology_a, topology_b)
    rows = replayer.diff(batch).to_pylist()
    assert len(replayer.memo) <= memo_limit
    assert [(row["msg_seq"], row["change"], row["removed"], row["added"]) for row in rows] == [
        (0, "changed", ["eu"], []),
        (2, "changed", ["eu"], []),
        (3, "newly_routed", [], ["lost"]),
        (4, "changed", ["eu"], []),
        (6, "changed", ["eu"], []),
    ]
