"""The order in which pytest-xdist hands test files to its workers: the longest first.

`make test` runs whole files on each worker (``--dist loadfile``), and a worker takes the next file when it
is almost out of tests. pytest-xdist's own order (``--loadscope-reorder``, its default) puts the files with
the most tests first, which has little to do with how long they run: in the fifth session's clean-clone run
the Spark cluster file (11 tests, 283 s) started a third of the way in, and 100-test files of milliseconds
led. Handing out the longest files first (the LPT rule of list scheduling) leaves the short ones for the end,
where they fill whatever difference is left between the workers, so neither worker idles while the other
finishes a long file. The Makefile turns pytest-xdist's reordering off (``--no-loadscope-reorder``) and
``tests/conftest.py`` sorts the collection with `order_longest_first` under xdist only: a plain ``pytest``
run keeps the collection order.

The seconds per file are the summed test times of a clean-clone run's JUnit report, kept in
``tests/file_seconds.json``; refresh them from a newer report (``make test-repeat`` or
``make pytest JUNIT_DIR=DIR`` writes one) with

    python -m tests.schedule DIR/main.xml

A file missing from the table (a new one) counts `UNKNOWN_FILE_S`, a little above the median file. The order
changes only when files start, never what a test does: each test owns its ports, directories and brokers.

The files of a directory in `SHARED_SCOPES` go to one worker as one unit (`make_scheduler`, which
``tests/conftest.py`` gives pytest-xdist for ``--dist loadfile``), sorted by their summed seconds: they share
session fixtures too costly to build twice. tests/analytics/ shares a Spark standalone cluster, a local
SparkSession and a journal recorded from pika traffic, which each worker running one of its files otherwise
started again (longest first put the cluster file on one worker and the others on the other).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

ROOT = Path(__file__).resolve().parents[1]
TABLE = Path(__file__).with_name("file_seconds.json")
UNKNOWN_FILE_S = 2.0
SHARED_SCOPES = ("tests/analytics/",)


class _Item(Protocol):
    @property
    def nodeid(self) -> str: ...


ItemT = TypeVar("ItemT", bound=_Item)


def file_seconds(table: Path = TABLE) -> dict[str, float]:
    """The table: file path relative to the repository (``tests/x/test_y.py``) -> seconds."""
    if not table.exists():
        return {}
    loaded: dict[str, float] = json.loads(table.read_text(encoding="utf-8"))
    return loaded


def scope_of(nodeid: str) -> str:
    """The unit a worker takes: the test's file, or the directory of `SHARED_SCOPES` it is in."""
    path = nodeid.split("::", 1)[0]
    return next((prefix for prefix in SHARED_SCOPES if path.startswith(prefix)), path)


def order_longest_first(items: list[ItemT], seconds: dict[str, float]) -> None:
    """Sort ``items`` in place so that the units (`scope_of`) of the longest recorded duration come first; the
    tests of a unit keep their order, and units of equal duration their collection order (a stable sort)."""
    files = {item.nodeid.split("::", 1)[0] for item in items}
    totals: dict[str, float] = {}
    for name in files:
        scope = scope_of(name)
        totals[scope] = totals.get(scope, 0.0) + seconds.get(name, UNKNOWN_FILE_S)

    def key(item: ItemT) -> float:
        return -totals[scope_of(item.nodeid)]

    items.sort(key=key)


def make_scheduler(config: Any, log: Any) -> Any:
    """pytest-xdist's ``--dist loadfile`` scheduler with the files of `SHARED_SCOPES` as one unit each."""
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    class SharedScopesScheduling(LoadFileScheduling):  # type: ignore[misc]  # xdist ships no type hints
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return SharedScopesScheduling(config, log)


def _file_of(classname: str) -> str | None:
    """``tests.compat.test_frames`` or ``tests.x.test_y.TestClass`` -> ``tests/compat/test_frames.py``."""
    parts = classname.split(".")
    while parts:
        candidate = Path(*parts).with_suffix(".py")
        if (ROOT / candidate).is_file():
            return candidate.as_posix()
        parts.pop()
    return None


def seconds_from_junit(report: Path) -> dict[str, float]:
    """Summed test time per file of a JUnit XML report (setup and teardown included, as pytest reports)."""
    totals: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = _file_of(case.get("classname", ""))
        if name is not None:
            totals[name] = totals.get(name, 0.0) + float(case.get("time", "0") or 0)
    return totals


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.schedule JUNIT.xml", file=sys.stderr)
        return 2
    totals = seconds_from_junit(Path(argv[0]))
    ordered = dict(sorted(((k, round(v, 1)) for k, v in totals.items()), key=lambda kv: (-kv[1], kv[0])))
    TABLE.write_text(json.dumps(ordered, indent=0) + "\n", encoding="utf-8")
    print(f"{len(ordered)} files, {sum(ordered.values()):.0f} s, written to {TABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
