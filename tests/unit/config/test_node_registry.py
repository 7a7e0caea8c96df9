"""The node registry's entries (broker/config/node_registry.py): a live entry is found; an entry of a process
that is gone, of a reused pid (another start time) or that cannot be read is stale and ignored; a node
removes only its own entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from broker.config.node_registry import entry_path, lookup, register, unregister

NODE = "rabbit@registry-test"


def _rewrite(path: Path, **fields: object) -> None:
    entry = json.loads(path.read_text())
    entry.update(fields)
    path.write_text(json.dumps(entry))


def test_a_live_entry_is_found_with_its_ports(tmp_path: Path) -> None:
    path = register(NODE, "::", {"amqp": 5673, "clustering": 25673}, tmp_path)
    assert path == entry_path(NODE, tmp_path)
    entry = lookup(NODE, tmp_path)
    assert entry is not None
    assert (entry.pid, entry.host, entry.ports) == (os.getpid(), "::", {"amqp": 5673, "clustering": 25673})
    assert lookup("other@registry-test", tmp_path) is None


def test_stale_and_unreadable_entries_are_ignored(tmp_path: Path) -> None:
    path = register(NODE, "::", {"amqp": 5673}, tmp_path)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    _rewrite(path, pid=int(gone.stdout))  # a process that has exited (and been reaped)
    assert lookup(NODE, tmp_path) is None
    _rewrite(path, pid=os.getpid(), started="1")  # this pid, but a process started at another time
    assert lookup(NODE, tmp_path) is None
    path.write_text("{not json")
    assert lookup(NODE, tmp_path) is None


def test_a_node_removes_only_its_own_entry(tmp_path: Path) -> None:
    path = register(NODE, "::", {"amqp": 5673}, tmp_path)
    _rewrite(path, pid=1)  # replaced meanwhile by another node of the same name
    unregister(path)
    assert path.exists()
    register(NODE, "::", {"amqp": 5673}, tmp_path)
    unregister(path)
    assert not path.exists()
