"""Spill files (broker.storage.spill): bodies written once and read once; a segment goes when it is no longer
written and all its bodies were read, so the disk held follows the backlog."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.storage import spill as spill_module
from broker.storage.spill import SpillDirectory, SpillError


def test_bodies_come_back_and_read_segments_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill_module, "SEGMENT_BYTES", 1000)
    spills = SpillDirectory(str(tmp_path))
    spill = spills.new_spill()
    bodies = [bytes([index]) * 300 for index in range(10)]  # 4 bodies per segment: 3 segments
    tokens = [spill.write(body) for body in bodies]
    assert len(list(spills.path.iterdir())) == 3
    for token, body in zip(tokens[:8], bodies[:8], strict=True):
        assert spill.read(token, len(body)) == body
    # The first two segments were read out; the one still written stays.
    assert len(list(spills.path.iterdir())) == 1
    with pytest.raises(SpillError):
        spill.read(tokens[0], 300)
    spill.close()
    assert list(spills.path.iterdir()) == []


def test_a_new_spill_directory_starts_empty(tmp_path: Path) -> None:
    spills = SpillDirectory(str(tmp_path))
    spills.new_spill().write(b"left by a crashed run")
    assert SpillDirectory(str(tmp_path)).path.exists()
    assert list((tmp_path / "spill").iterdir()) == []


def test_a_new_spill_directory_drops_whatever_else_is_in_it(tmp_path: Path) -> None:
    (tmp_path / "spill" / "stray").mkdir(parents=True)
    (tmp_path / "spill" / "stray" / "file").write_bytes(b"not ours")
    assert list(SpillDirectory(str(tmp_path)).path.iterdir()) == []
