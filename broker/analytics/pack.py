"""`warrenmq analytics pack`: the executors' Python environment as one archive, the way Spark's "Python
Package Management" guide does it (a virtual environment packed with venv-pack, shipped with ``--archives
ENV.tar.gz#environment`` and run with ``spark.pyspark.python=./environment/bin/python``).

The environment holds what the jobs' Python code needs on executors and nothing else: pyarrow (replay's
``mapInArrow`` tasks) and pandas (Spark's Arrow conversions), pinned to the driver's versions so both ends
speak the same Arrow format. pyspark itself is not packed: executors use their Spark's own copy. The
project's code is not packed either: the driver ships it per version (broker/analytics/pyfiles.py).
venv-pack links the interpreter rather than copying it, so executors need the same Python at the same path
(the guide's caveat; true on one machine and on images built from one Dockerfile).

Every executor of every application fetches and unpacks the archive, so it carries nothing executors never
run: the environment is made without pip and setuptools (``venv --without-pip``; this interpreter's pip,
22.3 or later, installs into it with ``--python``), and the packages' own test suites and pyarrow's C++
headers are left out (`EXCLUDED`; no module of pandas, numpy or pyarrow imports them). That is a quarter of
the unpacked environment (353 MB to 260 MB with pyarrow 26 and pandas 2.3).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from broker.analytics.errors import AnalyticsError

EXECUTOR_PACKAGES = ("pyarrow", "pandas")
# venv-pack filters (fnmatch patterns on paths inside the environment) for what executors never import.
EXCLUDED = ("*/site-packages/*/tests/*", "*/site-packages/*/*/tests/*", "*/site-packages/pyarrow/include/*")


def requirements() -> list[str]:
    """``name==version`` of each executor package, as installed beside this driver."""
    pins = []
    for name in EXECUTOR_PACKAGES:
        try:
            pins.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            raise AnalyticsError(f"{name} is not installed here: pip install 'warrenmq[analytics]'") from None
    return pins


def pack(out: str, extra: list[str] | None = None, verbose: bool = False) -> dict[str, object]:
    """Build a fresh virtual environment with the executor packages and pack it into ``out``."""
    try:
        import venv_pack  # type: ignore[import-untyped]
    except ImportError:
        raise AnalyticsError("venv-pack is not installed: pip install 'warrenmq[analytics]'") from None
    target = Path(out)
    if not target.name.endswith((".tar.gz", ".tgz", ".zip", ".tar")):
        raise AnalyticsError(
            f"--out must end in .tar.gz, .tgz, .zip or .tar (what --archives unpacks): {out}"
        )
    pins = [*requirements(), *(extra or [])]
    quiet = [] if verbose else ["--quiet"]
    with tempfile.TemporaryDirectory(prefix="warrenmq-pack-") as scratch:
        env = Path(scratch) / "environment"
        _run([sys.executable, "-m", "venv", "--without-pip", str(env)], "create the virtual environment")
        pip = [sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install"]
        _run([*pip, "--disable-pip-version-check", *quiet, *pins], f"install {' '.join(pins)}")
        target.parent.mkdir(parents=True, exist_ok=True)
        # compress_level 1: the archive is mostly compiled libraries, which barely compress further.
        venv_pack.pack(
            prefix=str(env),
            output=str(target),
            force=True,
            compress_level=1,
            verbose=verbose,
            filters=[("exclude", pattern) for pattern in EXCLUDED],
        )
    return {
        "job": "pack",
        "archive": str(target),
        "bytes": target.stat().st_size,
        "packages": pins,
        "python": sys.version.split()[0],
        "use": f"--archives {target}#environment --conf spark.pyspark.python=./environment/bin/python",
    }


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise AnalyticsError(f"could not {what}: {tail[0]}")
