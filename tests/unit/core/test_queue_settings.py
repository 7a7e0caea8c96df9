"""QueueSettings as a hand-written class (start-up time): what the code relies on from the frozen dataclass it
replaced. Queues share `PLAIN`, so it must refuse assignment; policy application compares settings by value
(``settings == current``) and derives them with ``replace``."""

from __future__ import annotations

import pytest

from broker.core.queues.queue_settings import PLAIN, QUORUM, QueueSettings, compile_settings


def test_settings_are_immutable() -> None:
    with pytest.raises(AttributeError):
        PLAIN.max_length = 1
    with pytest.raises(AttributeError):
        del PLAIN.expires
    assert PLAIN.max_length is None


def test_settings_are_equal_and_hashed_by_value() -> None:
    args = {"x-max-length": 5, "x-message-ttl": 100}
    first = compile_settings("a", "/", args, True, False, False, False)
    second = compile_settings("b", "/", args, True, False, False, False)
    assert first is not second
    assert first == second
    assert hash(first) == hash(second)
    assert first != PLAIN
    assert first != first.replace(max_length=6)
    assert QueueSettings() == PLAIN


def test_replace_changes_only_the_named_fields() -> None:
    base = QueueSettings(QUORUM, message_ttl=100, delivery_limit=20)
    changed = base.replace(delivery_limit=5, max_length=3)
    assert (changed.queue_type, changed.message_ttl, changed.delivery_limit, changed.max_length) == (
        QUORUM,
        100,
        5,
        3,
    )
    assert base.delivery_limit == 20
    assert base.max_length is None
    assert changed.limited
    assert not base.limited
    with pytest.raises(TypeError):
        base.replace(no_such_field=1)


def test_repr_names_every_field() -> None:
    shown = repr(QueueSettings(max_priority=10))
    assert shown.startswith("QueueSettings(queue_type='classic', ")
    assert "max_priority=10" in shown
    assert "max_segment_size_bytes=None" in shown
