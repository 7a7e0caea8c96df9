"""The broker never loads Spark, and the journal flags parse into a JournalConfig (off by default)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from broker.cli import build_parser
from broker.config import config_from_args


def test_broker_modules_do_not_import_spark_pandas_or_pyarrow() -> None:
    code = (
        "import sys, broker.cli, broker.node, broker.management.addons, broker.journal.service\n"
        "loaded = [m for m in ('pyspark', 'pandas', 'matplotlib', 'pyarrow', 'broker.analytics') "
        "if m in sys.modules]\n"
        "print(','.join(loaded))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_journal_is_off_by_default() -> None:
    assert config_from_args(build_parser().parse_args(["serve"])).journal is None


def test_journal_flags() -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--journal-dir",
            "/j",
            "--journal-mode",
            "full",
            "--journal-sample",
            "0.25",
            "--journal-capture-routing",
            "--journal-format",
            "jsonl",
            "--journal-rotate-mb",
            "1",
        ]
    )
    journal = config_from_args(args).journal
    assert journal is not None
    assert (journal.directory, journal.mode, journal.sample, journal.capture_routing) == (
        "/j",
        "full",
        0.25,
        True,
    )
    assert (journal.format, journal.rotate_bytes) == ("jsonl", 1024 * 1024)


def test_journal_sample_outside_zero_one_is_refused() -> None:
    args = build_parser().parse_args(["serve", "--journal-dir", "/j", "--journal-sample", "0"])
    with pytest.raises(SystemExit, match="--journal-sample"):
        config_from_args(args)


def test_analytics_errors_exit_2_before_starting_spark(capsys: pytest.CaptureFixture[str]) -> None:
    from broker.cli import main

    assert main(["analytics", "ttd", "--journal", "/definitely/missing", "--out", "/tmp/x"]) == 2
    assert "journal path does not exist: /definitely/missing" in capsys.readouterr().err
