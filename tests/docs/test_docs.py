"""The documentation holds itself to what a clone can check (fast, no servers):

- every shell example in README.md and docs/*.md is run by a named test that reads it, or says why it is not
  runnable (tests/docs/blocks.py has the markers);
- nothing links outside the repository: no http(s) address but a local broker's, every relative link resolves
  to a file of the repository, and no text points at files a clone does not have;
- neither the documentation nor the code cites issue numbers: comments say what behaviour they match;
- the README's `make run` variables reach `warrenmq serve`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs.blocks import (
    ROOT,
    SHELL_LANGUAGES,
    ShellBlock,
    documentation_pages,
    fenced_blocks,
    shell_blocks,
)

PAGES = documentation_pages()
# docs/benchmarks.md is being reworded in a branch of its own, which will mark its shell blocks and drop its
# issue numbers and design-document references; until then the three checks below leave it out.
EXEMPT: set[str] = set()
BLOCKS = [block for page in PAGES for block in shell_blocks(page) if block.page not in EXEMPT]
# A reference to an issue of this project: the word issue and a number, with or without the hash sign, or
# a hash sign and a number in parentheses. Built from parts so that this file does not match itself.
ISSUE_REFERENCE = re.compile(r"\bissues? #?\d+|\(" + "#" + r"\d+\)", re.IGNORECASE)
CODE_DIRS = ("broker", "protocol", "tests", "perf", "benchmarks", "docker", "examples", "ui/src", ".ci")
CODE_FILES = ("Makefile", "setup.py", "pyproject.toml", "Dockerfile", "mkdocs.yml")
CODE_SUFFIXES = {".py", ".pyi", ".c", ".h", ".sh", ".yaml", ".yml", ".toml", ".ts", ".tsx", ".css", ".html"}
CODE_SUFFIXES |= {""}  # .ci/run and other scripts without a suffix
# Addresses a user types for a broker of their own: the local one, or a placeholder in capitals
# (`https://API:6443`).
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]"}
URL = re.compile(r"https?://([^/\s)`'\"<>]+)")
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE_FILES = re.compile(r"\.\./shared/|\bdesign\.md\b|\bdesign §|\breliability\.md\b")


def _block_id(block: ShellBlock) -> str:
    return f"{block.page}:{block.line}"


def test_the_pages_have_shell_examples_to_check() -> None:
    assert len(BLOCKS) >= 10  # the parser finds them: a change of fence syntax must not empty this check
    assert {block.page for block in BLOCKS} >= {"README.md", "docs/analytics.md", "docs/configuration.md"}


@pytest.mark.parametrize("block", BLOCKS, ids=_block_id)
def test_every_shell_example_is_run_by_a_test_or_says_why_not(block: ShellBlock) -> None:
    where = f"{block.page}, line {block.line}"
    assert block.marker is not None, (
        f"{where}: a ```{block.language} block needs a marker on the line before it: "
        "<!-- run-by: TEST_FILE BLOCK_ID --> or <!-- not-runnable: REASON --> (tests/docs/blocks.py)"
    )
    if block.marker == "not-runnable":
        assert len(block.argument) >= 10, f"{where}: say why it is not runnable"
        return
    parts = block.argument.split()
    assert len(parts) == 2, f"{where}: run-by takes a test file and a block id"
    test_file, block_id = ROOT / parts[0], parts[1]
    assert test_file.is_file(), f"{where}: {parts[0]} does not exist"
    source = test_file.read_text(encoding="utf-8")
    reads = f"{where}: {parts[0]} must read this block with docs_block({block.page!r}, {block_id!r})"
    assert "docs_block(" in source, reads
    assert block.page in source, reads
    assert block_id in source, reads


PROGRAM_SNIPPETS = [
    block
    for page in PAGES
    for block in fenced_blocks(page)
    if block.marker == "run-by" and block.language not in SHELL_LANGUAGES
]


def test_the_pages_have_program_snippets_to_check() -> None:
    assert {block.language for block in PROGRAM_SNIPPETS} >= {"java", "python", "js", "go"}


@pytest.mark.parametrize("block", PROGRAM_SNIPPETS, ids=_block_id)
def test_every_program_snippet_marked_run_by_is_read_by_its_test(block: ShellBlock) -> None:
    where = f"{block.page}, line {block.line}"
    parts = block.argument.split()
    assert len(parts) == 2, f"{where}: run-by takes a test file and a block id"
    test_file = ROOT / parts[0]
    assert test_file.is_file(), f"{where}: {parts[0]} does not exist"
    source = test_file.read_text(encoding="utf-8")
    reads = f"{where}: {parts[0]} must read this block with docs_snippet({block.page!r}, {parts[1]!r})"
    assert "docs_snippet(" in source, reads
    assert block.page in source, reads
    assert parts[1] in source, reads


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_nothing_links_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for match in URL.finditer(text):
        host = match.group(1).rsplit("@", 1)[-1]
        host = host if host.startswith("[") and host.endswith("]") else re.sub(r":\d+$", "", host)
        host = re.sub(r"^(\[[^\]]*\]):\d+$", r"\1", host)
        # A host an example program fills in ({host} in Python, ${host} in JavaScript): the container's.
        placeholder = host.startswith(("{", "${"))
        assert host in LOCAL_HOSTS or placeholder or re.fullmatch(r"[A-Z][A-Z0-9_]*", host), (
            f"{page.name}: {match.group(0)} leaves the repository (only a local broker's address may)"
        )
    for match in MARKDOWN_LINK.finditer(text):
        target = match.group(1).split("#", 1)[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # an anchor on the same page, or an address (checked above)
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name}: {match.group(1)} leaves the repository"
        assert resolved.exists(), f"{page.name}: {match.group(1)} is not in the repository"
    outside = None if page.relative_to(ROOT).as_posix() in EXEMPT else OUTSIDE_FILES.search(text)
    assert outside is None, f"{page.name}: {outside.group(0)!r} names a file a clone does not have"


def test_neither_docs_nor_code_cite_issue_numbers() -> None:
    files = [page for page in PAGES if page.relative_to(ROOT).as_posix() not in EXEMPT]
    for directory in CODE_DIRS:
        files += [
            path
            for path in (ROOT / directory).rglob("*")
            if path.is_file() and path.suffix in CODE_SUFFIXES and "node_modules" not in path.parts
        ]
    files += [ROOT / name for name in CODE_FILES]
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(text.split("\n"), 1):
            if ISSUE_REFERENCE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
            # Nor a document a clone does not have (the rules they came from are in docs/architecture.md).
            elif path != Path(__file__) and OUTSIDE_FILES.search(line):
                found.append(
                    f"{path.relative_to(ROOT)}:{number}: {line.strip()} (a file a clone does not have)"
                )
    assert not found, "say what it matches instead of which issue asked for it:\n" + "\n".join(found)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_passes_the_readme_variables_to_serve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = "make run HOST=127.0.0.1 PORT=5673 MANAGEMENT_PORT=15673 PROMETHEUS_PORT=-1"
    assert shown in readme
    dry = subprocess.run(
        ["make", "-n", *shown.split()[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert dry.returncode == 0, dry.stderr
    command = " ".join(dry.stdout.replace("\\\n", " ").split())
    assert (
        "warrenmq serve --host 127.0.0.1 --port 5673 --management-port 15673 --prometheus-port -1" in command
    ), command
