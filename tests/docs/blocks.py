"""Shell examples in README.md and docs/*.md, and the marker each carries.

Every ```sh, ```bash, ```shell or ```console block is preceded (on the line before its fence) by one of:

- ``<!-- run-by: TEST_FILE BLOCK_ID -->``: TEST_FILE runs the block; it reads it with ``docs_block(PAGE,
  BLOCK_ID)``, so it names both the page and the id (tests/docs/test_docs.py checks that it does);
- ``<!-- not-runnable: REASON -->``: why no test runs it (it installs, serves until stopped, needs a
  cluster, ...).

A block in another language (```java, ```go, ...) may carry a run-by marker too: its test reads it with
``docs_snippet(PAGE, BLOCK_ID)`` and checks it is the program it runs (tests/docs/test_docs.py checks the
marker names a test that does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
_FENCE = re.compile(r"^(\s*)```\s*([\w-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*(run-by|not-runnable):\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class ShellBlock:
    page: str  # relative to the repository, e.g. docs/analytics.md
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    marker: str | None  # "run-by" or "not-runnable"
    argument: str  # the marker's text after the colon


def documentation_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shell_blocks(path: Path) -> list[ShellBlock]:
    """The shell blocks of one page, with the marker on the line before each fence (if any)."""
    return [block for block in fenced_blocks(path) if block.language in SHELL_LANGUAGES]


def fenced_blocks(path: Path) -> list[ShellBlock]:
    """Every fenced block of one page, whatever its language, with the marker on the line before it."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[ShellBlock] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        language = opening.group(2)
        if language:
            indent = len(opening.group(1))
            marker = _MARKER.match(lines[index - 1]) if index > 0 else None
            blocks.append(
                ShellBlock(
                    page=path.relative_to(ROOT).as_posix(),
                    line=index + 1,
                    language=language,
                    text="".join(line[indent:] + "\n" for line in lines[index + 1 : end]),
                    marker=marker.group(1) if marker else None,
                    argument=marker.group(2) if marker else "",
                )
            )
        index = end + 1
    return blocks


def docs_block(page: str, block_id: str) -> str:
    """The text of the shell block on ``page`` (a path from the root) marked ``run-by: ... block_id``."""
    found = [
        block
        for block in shell_blocks(ROOT / page)
        if block.marker == "run-by" and block.argument.split()[-1:] == [block_id]
    ]
    assert len(found) == 1, f"{page}: one block must be marked run-by ... {block_id}, found {len(found)}"
    return found[0].text


def docs_snippet(page: str, block_id: str) -> str:
    """The text of the block in any language on ``page`` marked ``run-by: ... block_id``."""
    found = [
        block
        for block in fenced_blocks(ROOT / page)
        if block.marker == "run-by" and block.argument.split()[-1:] == [block_id]
    ]
    assert len(found) == 1, f"{page}: one block must be marked run-by ... {block_id}, found {len(found)}"
    return found[0].text
