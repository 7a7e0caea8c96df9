"""Run the test suite several times and name every test that did not pass each time (`make test-repeat N=3`).

Each run is the command given after ``--`` (by default ``make suites``, what ``make test`` runs beside
the linters), with ``JUNIT_DIR`` naming the directory under ``--reports`` where the Makefile's pytest
targets write their JUnit XML reports. A test counts as flaky when it passed in some runs and failed or
errored in others, as failing when it never passed; skips are counted apart. The summary goes to stdout
(and ``--summary FILE`` as Markdown, for the docs); the exit status is 1 when any test was flaky or
failing, or a run produced no report.

    python -m tests.repeat --runs 3
    python -m tests.repeat --runs 5 -- make pytest PYTEST_ARGS=tests/integration/test_scale.py
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_COMMAND = ("make", "suites")


@dataclass
class Tally:
    """One test's outcomes over the runs."""

    outcomes: Counter[str] = field(default_factory=Counter)
    messages: list[str] = field(default_factory=list)


def outcomes_of(report: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, first line of the failure) from one JUnit XML report."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                message = (child.get("message") or "").splitlines()[0][:200] if child.get("message") else ""
                break
            if child.tag == "skipped":
                outcome = "skipped"
        found[test_id] = (outcome, message)
    return found


def run_once(command: list[str], reports: Path, index: int) -> tuple[int, float, list[Path]]:
    """One run of ``command``; its exit status, wall time in seconds and the reports it wrote."""
    run_dir = reports / f"run-{index}"
    run_dir.mkdir(parents=True, exist_ok=True)
    for old in run_dir.glob("*.xml"):
        old.unlink()
    # The Makefile's pytest targets write their JUnit XML reports there (main.xml, pure.xml); another
    # command can read JUNIT_DIR itself.
    env = dict(os.environ, JUNIT_DIR=str(run_dir.resolve()))
    started = time.monotonic()
    status = subprocess.call(command, env=env)
    return status, time.monotonic() - started, sorted(run_dir.glob("*.xml"))


def summarise(
    tallies: dict[str, Tally], runs: int, walls: list[float], statuses: list[int]
) -> tuple[str, bool]:
    """The Markdown summary and whether every test passed every time."""
    flaky = {name: t for name, t in tallies.items() if t.outcomes["failed"] and t.outcomes["passed"]}
    failing = {name: t for name, t in tallies.items() if t.outcomes["failed"] and not t.outcomes["passed"]}
    always = sum(1 for t in tallies.values() if t.outcomes["passed"] == runs)
    skipped = sum(1 for t in tallies.values() if t.outcomes["skipped"] and not t.outcomes["failed"])
    lines = [
        f"- runs: {runs}; wall time per run: {', '.join(f'{w / 60:.1f} min' for w in walls)}; "
        f"exit statuses: {', '.join(map(str, statuses))}",
        f"- tests seen: {len(tallies)}; passed in every run: {always}; skipped (in some run): {skipped}",
        f"- flaky (passed and failed): {len(flaky)}; failing in every run: {len(failing)}",
    ]
    for title, group in (("flaky", flaky), ("failing", failing)):
        for name, tally in sorted(group.items()):
            first = next((m for m in tally.messages if m), "")
            lines.append(f"  - {title}: `{name}` failed {tally.outcomes['failed']}/{runs}: {first}")
    ok = not flaky and not failing and all(status == 0 for status in statuses)
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reports", type=Path, default=Path(".test-repeat"))
    parser.add_argument("--summary", type=Path, help="also write the summary here (Markdown)")
    parser.add_argument("command", nargs="*", help="the command of one run (after --)")
    args = parser.parse_args(argv)
    command = args.command or list(DEFAULT_COMMAND)
    tallies: dict[str, Tally] = defaultdict(Tally)
    walls: list[float] = []
    statuses: list[int] = []
    for index in range(1, args.runs + 1):
        print(f"== run {index}/{args.runs}: {shlex.join(command)}", flush=True)
        status, wall, reports = run_once(command, args.reports, index)
        walls.append(wall)
        statuses.append(status if reports else 1)
        seen: dict[str, tuple[str, str]] = {}
        for report in reports:  # the pure variant's tests apart from the same tests compiled
            seen.update({f"{report.stem}:{name}": value for name, value in outcomes_of(report).items()})
        for name, (outcome, message) in seen.items():
            tallies[name].outcomes[outcome] += 1
            if message:
                tallies[name].messages.append(message)
        for name, tally in tallies.items():
            if name not in seen:  # collected in another run only: an error at collection, or a crash
                tally.outcomes["failed"] += 1
        print(f"== run {index}: exit {status}, {wall / 60:.1f} min, {len(seen)} tests", flush=True)
    text, ok = summarise(tallies, args.runs, walls, statuses)
    print(text)
    if args.summary:
        args.summary.write_text(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
