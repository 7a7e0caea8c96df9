"""Print line and branch coverage of protocol/ and broker/ per package from the `.coverage` data that
`make pytest` (the code that runs in the test processes; brokers started as child processes are not traced)
and `make pytest-pure` (the in-process suites on the pure-Python variant) collected, and fail when the total
falls below pyproject.toml's ``[tool.coverage.report] fail_under`` (the figure may rise, never fall).

The total is coverage.py's own: covered lines plus covered branches over lines plus branches.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import coverage

# Reported apart; every other file counts under its top-level package (protocol, broker).
PACKAGES = (
    "protocol",
    "broker/core",
    "broker/session",
    "broker/server",
    "broker/storage",
    "broker/management",
    "broker/journal",
    "broker/ha",
    "broker/ctl",
    "broker/config",
    "broker/testing",
    "broker/analytics",
    "broker",
)


def package_of(path: str) -> str:
    return next(p for p in PACKAGES if path == p or path.startswith(p + "/"))


def main() -> int:
    cov = coverage.Coverage()
    cov.load()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "coverage.json"
        cov.json_report(outfile=str(out))
        report = json.loads(out.read_text())
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path, entry in report["files"].items():
        summary = entry["summary"]
        figures = (
            summary["covered_lines"],
            summary["num_statements"],
            summary["covered_branches"],
            summary["num_branches"],
        )
        for target in (package_of(path), "total"):
            sums[target] = [a + b for a, b in zip(sums[target], figures, strict=True)]
    print("coverage of protocol/ and broker/ in the test processes (make pytest, make pytest-pure):")
    print(f"  {'package':<20} {'lines':>16} {'branches':>16} {'total':>7}")
    for name in (*[p for p in PACKAGES if p in sums], "total"):
        lines, statements, branches, all_branches = sums[name]
        total = 100 * (lines + branches) / max(1, statements + all_branches)
        print(
            f"  {name:<20} {lines:>6}/{statements:<6} {100 * lines / max(1, statements):3.0f}%"
            f" {branches:>5}/{all_branches:<5} {100 * branches / max(1, all_branches):3.0f}% {total:6.1f}%"
        )
    total = float(report["totals"]["percent_covered"])
    configured = cov.config.get_option("report:fail_under")
    floor = float(configured) if isinstance(configured, int | float | str) else 0.0
    if total < floor:
        print(f"coverage {total:.1f}% is below the floor of {floor:.0f}% (pyproject.toml fail_under)")
        return 1
    print(f"coverage {total:.1f}% (floor {floor:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
