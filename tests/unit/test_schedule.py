"""tests/schedule.py: the collection sorted longest file first, and the table read from a JUnit report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.schedule import UNKNOWN_FILE_S, file_seconds, order_longest_first, scope_of, seconds_from_junit


@dataclass
class Item:
    nodeid: str


def test_files_go_longest_first_and_keep_their_tests_and_ties_in_order() -> None:
    items = [
        Item("tests/a.py::one"),
        Item("tests/a.py::two"),
        Item("tests/b.py::one"),
        Item("tests/c.py::K::one"),
        Item("tests/c.py::K::two"),
        Item("tests/d.py::one"),
        Item("tests/new.py::one"),
    ]
    seconds = {"tests/a.py": 1.0, "tests/b.py": 30.0, "tests/c.py": 30.0, "tests/d.py": UNKNOWN_FILE_S + 1}
    order_longest_first(items, seconds)
    assert [item.nodeid for item in items] == [
        "tests/b.py::one",
        "tests/c.py::K::one",
        "tests/c.py::K::two",
        "tests/d.py::one",
        "tests/new.py::one",  # not in the table: UNKNOWN_FILE_S
        "tests/a.py::one",
        "tests/a.py::two",
    ]


def test_seconds_per_file_are_summed_from_a_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "main.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        '<testcase classname="tests.unit.test_schedule" name="a" time="1.5" />'
        '<testcase classname="tests.unit.test_schedule.Grouped" name="b" time="2.0" />'
        '<testcase classname="tests.compat.clients.test_client_matrix" name="c[go]" time="29.0" />'
        '<testcase classname="tests.gone.test_removed" name="d" time="9.0" />'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )
    assert seconds_from_junit(report) == {
        "tests/unit/test_schedule.py": 3.5,
        "tests/compat/clients/test_client_matrix.py": 29.0,
    }


def test_the_committed_table_still_describes_the_suite() -> None:
    """A renamed or removed file's entry is only ignored, but a table whose files have mostly moved orders
    nothing: then refresh it (python -m tests.schedule REPORT.xml)."""
    root = Path(__file__).resolve().parents[2]
    table = file_seconds()
    assert table, "tests/file_seconds.json is missing or empty"
    assert all(isinstance(seconds, float) and seconds >= 0 for seconds in table.values())
    missing = [name for name in table if not (root / name).is_file()]
    assert len(missing) <= len(table) // 10, f"refresh tests/file_seconds.json: {missing}"


def test_the_analytics_files_are_one_unit_sorted_by_their_summed_seconds() -> None:
    items = [
        Item("tests/analytics/test_cluster.py::one"),
        Item("tests/analytics/test_jobs.py::one"),
        Item("tests/compat/test_frames.py::one"),
        Item("tests/unit/test_a.py::one"),
    ]
    seconds = {
        "tests/analytics/test_cluster.py": 20.0,
        "tests/analytics/test_jobs.py": 20.0,
        "tests/compat/test_frames.py": 30.0,
        "tests/unit/test_a.py": 0.5,
    }
    assert scope_of("tests/analytics/test_jobs.py::one") == "tests/analytics/"
    assert scope_of("tests/compat/test_frames.py::K::one") == "tests/compat/test_frames.py"
    order_longest_first(items, seconds)
    assert [item.nodeid for item in items] == [
        "tests/analytics/test_cluster.py::one",  # 40 s together
        "tests/analytics/test_jobs.py::one",
        "tests/compat/test_frames.py::one",
        "tests/unit/test_a.py::one",
    ]
