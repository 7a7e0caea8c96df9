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
    "bad character range": "range out of order in character class",
}


def pcre_reason(pattern: str, error: re.error) -> tuple[str, int]:
    """(message, offset) as ``re:compile(Pattern)`` returns them in ``{error, {Message, Offset}}``; an error
    without a known PCRE wording keeps Python's message and position."""
    message = str(error.msg)
    for start, pcre in _AT_END.items():
        if message.startswith(start):
            return pcre, len(pattern.encode())
    for start, pcre in _AT_POSITION.items():
        if message.startswith(start):
            return pcre, len(pattern[: error.pos or 0].encode())
    return message, error.pos or 0
