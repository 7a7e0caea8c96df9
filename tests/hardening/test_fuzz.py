"""A bounded coverage-guided fuzz run (atheris) of the frame splitter, the codecs and the table decoder.

The harness is tests/hardening/fuzz_decoders.py; it runs in a child process (libFuzzer owns the process and
exits when done). ``make test`` gives it 15 seconds; docs/protection.md has the long-run command. A crash, an
unexpected exception type or a table decoded differently from pamqp makes libFuzzer exit non-zero with the
input that did it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_decoders_survive_a_bounded_fuzz_run(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    # Seeds: a publish with headers, a queue.declare with arguments (the fuzzer mutates from real shapes).
    (corpus / "publish").write_bytes(
        b"\x20\x00\x00\x00\x05\x01kS\x00\x00\x00\x01x"
        + b"\x01\x00\x01\x00\x00\x00\x0a\x00\x3c\x00\x28\x00\x00\x00\x01q\x00\xce"
        + b"\x02\x00\x01\x00\x00\x00\x18\x00\x3c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x20\x00"
        + b"\x00\x00\x00\x08\x01aA\x00\x00\x00\x02VV\xce"
    )
    (corpus / "declare").write_bytes(
        b"\x00\x01\x00\x01\x00\x00\x00\x13\x00\x32\x00\x0a\x00\x00\x01q\x00\x00\x00\x00\x06\x01kF\x00\x00\x00\x00\xce"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.hardening.fuzz_decoders",
            "-max_total_time=15",
            "-timeout=5",
            "-rss_limit_mb=1024",
            str(corpus),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = result.stderr + result.stdout
    assert result.returncode == 0, output[-4000:]
    runs = re.search(r"Done (\d+) runs", output)
    assert runs is not None, output[-2000:]
    assert int(runs.group(1)) > 1000
