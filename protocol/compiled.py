"""Which build of the typed pure layers this process runs: compiled by mypyc, or pure Python.

setup.py compiles a chosen set of modules of ``protocol`` and ``broker.core`` with mypyc where a C compiler is
present, and writes ``_compiled.json`` next to this file: each compiled module with the SHA-256 of the source
it was built from. A compiled module is an extension file beside its ``.py``, and Python's import system
prefers the extension. This module decides once per process, before any of them is imported (the packages'
``__init__`` call `select`), whether to keep that preference. The pure sources are used instead, all of them
together (compiled modules call each other natively, so a mix would not work), when:

- ``WARRENMQ_PURE=1`` asks for the pure variant (the test suite's second pass, a profiler that needs Python
  frames, a bisection);
- a source changed after the build: the extension would silently run the old code, so the changed source
  wins, with a warning until ``make`` (or ``pip install -e .``) rebuilds;
- an extension of the set is missing (an interrupted or partial build).

`BUILD` says what was chosen, for the ready line, ``warrenmq --version`` and the management overview.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

MANIFEST_NAME = "_compiled.json"
PURE_ENV = "WARRENMQ_PURE"
COMPILED = "mypyc"
PURE = "pure"


def source_digest(path: Path) -> str:
    """What the manifest records per module (setup.py computes it the same way)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def decide(root: Path, manifest: Mapping[str, str] | None, environ: Mapping[str, str]) -> tuple[str, str]:
    """(build, reason): ``mypyc`` when every module of the manifest (dotted name -> source digest, paths under
    ``root``) has its extension and an unchanged source and the environment does not ask for pure Python."""
    if not manifest:
        return PURE, "not compiled"
    if environ.get(PURE_ENV, "") not in ("", "0"):
        return PURE, f"{PURE_ENV}={environ[PURE_ENV]}"
    missing = [name for name in manifest if _extension(root, name) is None]
    if len(missing) == len(manifest):
        return PURE, "not compiled"  # setup.py generated the C code, but no compiler built it
    if missing:
        return PURE, f"extension missing for {', '.join(sorted(missing))}"
    changed = [name for name, digest in manifest.items() if _digest_or_none(_source(root, name)) != digest]
    if changed:
        return PURE, f"source changed since the build: {', '.join(sorted(changed))}"
    return COMPILED, ""


class SourceFinder:
    """Imports the listed modules from their ``.py``, even where an extension of that name is beside it.

    A meta path finder is any object with ``find_spec``: not subclassing ``importlib.abc.MetaPathFinder``
    keeps importlib.abc, and the importlib.resources, tempfile and shutil it imports, out of every start
    (start-up time)."""

    def __init__(self, sources: Mapping[str, Path]) -> None:
        self.sources = dict(sources)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self.sources.get(fullname)
        if source is None:
            return None
        import importlib.util  # the pure variant only: not on every start

        return importlib.util.spec_from_file_location(fullname, source)


def select() -> str:
    """Decide this process's build once; installs `SourceFinder` for the pure variant. Returns `BUILD`."""
    global BUILD, REASON
    if BUILD:
        return BUILD
    root = Path(__file__).resolve().parent.parent
    manifest = _read_manifest(Path(__file__).with_name(MANIFEST_NAME))
    BUILD, REASON = decide(root, manifest, os.environ)
    if BUILD == COMPILED and manifest:
        MODULES.update(manifest)
    if BUILD == PURE and manifest:
        if any(name in sys.modules for name in manifest):  # pragma: no cover - select() runs in __init__
            raise RuntimeError("protocol.compiled.select() ran after a compiled module was imported")
        sys.meta_path.insert(0, SourceFinder({name: _source(root, name) for name in manifest}))
        if REASON.startswith("source changed"):
            warnings.warn(
                f"WarrenMQ runs its pure-Python modules: {REASON}; `make` or `pip install -e .` recompiles",
                RuntimeWarning,
                stacklevel=2,
            )
    return BUILD


def is_compiled(module: str) -> bool:
    """Whether this process runs ``module`` (a dotted name) compiled."""
    return module in MODULES


def native_wire() -> ModuleType | None:
    """protocol._wire, the C frame scanner and delivery encoder (built by setup.py where gcc is), or None:
    not built, or the pure variant asked for (``WARRENMQ_PURE``, which runs every native part as Python, or
    ``WARRENMQ_WIRE_NATIVE=0``, this part alone: for measuring what it gains)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0") or os.environ.get("WARRENMQ_WIRE_NATIVE", "1") == "0":
        return None
    try:
        from protocol import _wire
    except ImportError:
        return None
    return _wire


def describe() -> str:
    """One phrase for people: ``compiled (mypyc)`` or ``pure Python (<why>)``, and ``, C wire loops`` when
    protocol._wire serves."""
    build = "compiled (mypyc)" if BUILD == COMPILED else f"pure Python ({REASON})"
    return build + (", C wire loops" if native_wire() is not None else "")


def _read_manifest(path: Path) -> dict[str, str] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    modules = data.get("modules") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in modules.items()} if isinstance(modules, dict) else None


def _source(root: Path, name: str) -> Path:
    return root.joinpath(*name.split(".")).with_suffix(".py")


def _extension(root: Path, name: str) -> Path | None:
    base = root.joinpath(*name.split("."))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = base.with_name(base.name + suffix)
        if candidate.exists():
            return candidate
    return None


def _digest_or_none(path: Path) -> str | None:
    try:
        return source_digest(path)
    except OSError:
        return None


BUILD = ""
REASON = ""
MODULES: set[str] = set()  # the compiled modules this process runs
