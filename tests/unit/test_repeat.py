"""tests/repeat.py (`make test-repeat`): outcomes read from JUnit XML reports and the verdict over runs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.repeat import Tally, outcomes_of, summarise

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.a" name="test_ok" time="0.1"/>
<testcase classname="tests.a" name="test_bad" time="0.1">
<failure message="assert 1 == 2&#10;more">tb</failure></testcase>
<testcase classname="tests.b" name="test_setup" time="0.1">
<error message="fixture broke">tb</error></testcase>
<testcase classname="tests.b" name="test_skip" time="0.0"><skipped message="no oracle"/></testcase>
</testsuite></testsuites>
"""


def test_each_testcase_is_passed_failed_or_skipped_with_the_first_line_of_its_message(tmp_path: Path) -> None:
    report = tmp_path / "main.xml"
    report.write_text(REPORT)
    assert outcomes_of(report) == {
        "tests.a::test_ok": ("passed", ""),
        "tests.a::test_bad": ("failed", "assert 1 == 2"),
        "tests.b::test_setup": ("failed", "fixture broke"),
        "tests.b::test_skip": ("skipped", ""),
    }


def test_a_test_that_failed_once_in_three_runs_is_flaky_and_fails_the_verdict() -> None:
    tallies = {
        "main:steady": Tally(Counter(passed=3)),
        "main:wobbly": Tally(Counter(passed=2, failed=1), ["TimeoutError"]),
    }
    text, ok = summarise(tallies, 3, [60.0, 61.0, 59.0], [0, 1, 0])
    assert not ok
    assert "flaky (passed and failed): 1; failing in every run: 0" in text
    assert "flaky: `main:wobbly` failed 1/3: TimeoutError" in text


def test_runs_where_everything_passed_give_a_clean_verdict() -> None:
    tallies = {"main:steady": Tally(Counter(passed=3)), "main:skipped": Tally(Counter(skipped=3))}
    text, ok = summarise(tallies, 3, [60.0, 61.0, 59.0], [0, 0, 0])
    assert ok
    assert "passed in every run: 1; skipped (in some run): 1" in text
