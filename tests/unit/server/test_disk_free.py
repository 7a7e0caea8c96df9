"""The disk alarm's free-space figure (disk_free_limit): statvfs read directly, as shutil.disk_usage reads it,
without importing shutil into every start."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from broker.server.alarms import disk_free_bytes


def test_disk_free_bytes_is_what_shutil_reports(tmp_path: Path) -> None:
    ours, theirs = disk_free_bytes(str(tmp_path)), shutil.disk_usage(tmp_path).free
    assert abs(ours - theirs) < 64 * 1024 * 1024  # other writers on the file system meanwhile


def test_the_alarms_module_does_not_import_shutil() -> None:
    code = "import sys; import broker.server.alarms; print('shutil' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False"]
