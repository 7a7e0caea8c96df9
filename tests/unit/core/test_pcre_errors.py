"""An invalid regex's reason as Erlang's re:compile (OTP 25, PCRE 8) gives it, figures taken from erl."""

from __future__ import annotations

import re

import pytest

from broker.core.access.pcre_errors import pcre_reason

ERLANG = [
    ("(", "missing )", 1),
    ("a(b", "missing )", 3),
    ("[", "missing terminating ] for character class", 1),
    ("*", "nothing to repeat", 0),
    ("a**", "nothing to repeat", 2),
    ("a)", "unmatched parentheses", 1),
    ("\\", "\\ at end of pattern", 1),
    ("[z-a]", "range out of order in character class", 3),
    ("a[b-a]c", "range out of order in character class", 4),
    ("x{2,1}", "numbers out of order in {} quantifier", 5),
    ("é(", "missing )", 3),  # offsets count the pattern's UTF-8 bytes (binary_to_list of it)
]


@pytest.mark.parametrize(("pattern", "message", "offset"), ERLANG)
def test_the_reason_is_erlangs(pattern: str, message: str, offset: int) -> None:
    with pytest.raises(re.error) as error:
        re.compile(pattern)
    assert pcre_reason(pattern, error.value) == (message, offset)
