"""Why a regex is invalid, in the words and at the offset Erlang's ``re:compile`` (PCRE 8) reports, for the
errors a permission or policy pattern commonly has; Python's `re` finds the same errors with other texts."""

from __future__ import annotations

import re

# Python re.error message (its start) -> PCRE 8's message; the offset is where PCRE stops: at the end of the
# pattern for the unterminated constructs, at the offending character otherwise.
_AT_END = {
    "missing ), unterminated subpattern": "missing )",
    "unterminated character set": "missing terminating ] for character class",
    "bad escape (end of pattern)": "\\ at end of pattern",
}
_AT_POSITION = {
    "nothing to repeat": "nothing to repeat",
    "multiple repeat": "nothing to repeat",
    "unbalanced parenthesis": "unmatched parentheses",
}


def pcre_reason(pattern: str, error: re.error) -> tuple[str, int]:
    """(message, offset) as ``re:compile(Pattern)`` returns them in ``{error, {Message, Offset}}``; an error
    without a known PCRE wording keeps Python's message and position."""
    message = str(error.msg)
    for start, pcre in _AT_END.items():
        if message.startswith(start):
            return pcre, len(pattern.encode())
    position = error.pos or 0
    for start, pcre in _AT_POSITION.items():
        if message.startswith(start):
            return pcre, len(pattern[:position].encode())
    if message.startswith("bad character range"):
        # Python points at the range's first character, PCRE at its last ("[z-a]": 3).
        end = position + len(message.removeprefix("bad character range ")) - 1
        return "range out of order in character class", len(pattern[:end].encode())
    if message.startswith("min repeat greater than max repeat"):
        # PCRE stops at the quantifier's closing brace ("x{2,1}": 5).
        end = pattern.find("}", position)
        return "numbers out of order in {} quantifier", len(pattern[: end if end >= 0 else position].encode())
    return message, position
