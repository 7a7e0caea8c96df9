"""The plugin as users run it: the sample module under pytest-xdist (each worker has its own broker)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_sample_usage_module_passes_under_xdist_with_two_workers() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider", "tests/plugin_usage"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[gw0]" in result.stdout
    assert "[gw1]" in result.stdout
    assert "8 passed" in result.stdout


def test_plugin_is_registered_as_the_warrenmq_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"warrenmq": "broker.testing.pytest_plugin"}
