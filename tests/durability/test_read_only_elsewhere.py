"""A store whose data directory is the only writable place: a container run with `--read-only` and a volume
(tests/container covers that with the image), here a private mount namespace in which /tmp, /var/tmp, /usr and
the working directory are read-only. A new store is created and written there, and reopened: SQLite's
temporary files (statement journals past 64 KiB, a page or two with the store's 64 KiB pages) must not need
any other directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = textwrap.dedent(
    """
    import sys
    from broker.storage.sqlite import SqliteStore

    store = SqliteStore(sys.argv[1])
    store.db.execute("BEGIN IMMEDIATE")
    for key in range(200):  # rows of 1 KiB: pages of 64 KiB fill and split inside one transaction
        store.db.execute(
            "INSERT INTO vhosts (name, metadata) VALUES (?, ?)", (f"v{key:04d}", "x" * 1024)
        )
    store.db.execute("COMMIT")
    store.close()
    again = SqliteStore(sys.argv[1])
    print(again.db.execute("SELECT count(*) FROM vhosts").fetchone()[0])
    """
)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare(1)")
def test_a_new_store_needs_no_writable_directory_but_its_own(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "store.py"
    script.write_text(_SCRIPT)
    # The data directory is bind-mounted onto itself first; the recursive binds that then make its parents
    # read-only carry that mount along, writable, under a read-only /tmp.
    read_only = " ".join(d for d in ("/tmp", "/var/tmp", "/usr") if Path(d).is_dir())
    shell = f"""
        set -e
        mount --bind {data} {data}
        for d in {read_only}; do mount --rbind "$d" "$d"; mount -o remount,bind,ro "$d"; done
        if touch /tmp/warrenmq-probe 2>/dev/null; then echo "/tmp still writable" >&2; exit 3; fi
        cd /usr
        exec {sys.executable} {script} {data}
    """
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", shell],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    if done.returncode != 0 and "mount" in done.stderr and "permission denied" in done.stderr.lower():
        pytest.skip(f"no mount namespace here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["200"]
