"""broker/cli.py's parser: a `serve` command line parses the same with the parser `serve` builds for itself,
which leaves out `config show`'s copy of the serve arguments (start-up time)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from broker.cli import build_parser, terminal_columns

SERVE_LINES = [
    ["serve"],
    ["serve", "--host", "127.0.0.1", "--port", "0", "--management-port", "-1", "--data-dir", "none"],
    ["serve", "--log-format", "json", "--journal-dir", "/tmp/j", "--fsync", "batch"],
]


@pytest.mark.parametrize("argv", SERVE_LINES)
def test_serve_lines_parse_the_same_with_the_serving_parser(argv: list[str]) -> None:
    assert vars(build_parser(serving=True).parse_args(argv)) == vars(build_parser().parse_args(argv))


def test_the_full_parser_still_gives_config_show_the_serve_arguments() -> None:
    args = build_parser().parse_args(["config", "show", "--format", "json", "--port", "5673"])
    assert (args.output_format, args.port) == ("json", 5673)


def test_an_unknown_serve_argument_is_refused_alike(capsys: pytest.CaptureFixture[str]) -> None:
    errors = []
    for serving in (True, False):
        with pytest.raises(SystemExit):
            build_parser(serving=serving).parse_args(["serve", "--no-such-flag"])
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1]
    assert "--no-such-flag" in errors[0]


def test_serve_sets_its_gc_thresholds_before_structlog_and_asyncio_load() -> None:
    """Start-up allocates much and frees little: with the default thresholds the collector ran ~31 times
    while structlog and asyncio loaded, finding nothing (start-up time)."""
    code = (
        "import gc, sys; from broker.cli import _prepare_serve_process; _prepare_serve_process();"
        "from broker.server.runtime import GC_THRESHOLDS;"
        "print(gc.get_threshold() == GC_THRESHOLDS, 'structlog' in sys.modules, 'asyncio' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "False", "False"]


def test_help_takes_the_width_shutil_would_give(monkeypatch: pytest.MonkeyPatch) -> None:
    """The formatter finds the width without importing shutil at start-up, the same way: $COLUMNS, else the
    terminal on standard output, else 80."""
    import shutil

    for columns in ("100", "", "junk", "0"):
        monkeypatch.setenv("COLUMNS", columns)
        assert terminal_columns() == shutil.get_terminal_size().columns
    monkeypatch.setenv("COLUMNS", "60")
    usage = build_parser(serving=True).format_help()
    assert max(len(line) for line in usage.splitlines()) <= 58


def test_building_the_serve_parser_does_not_import_shutil() -> None:
    code = (
        "import sys; from broker.cli import build_parser; build_parser(serving=True);"
        "print('shutil' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False"]
