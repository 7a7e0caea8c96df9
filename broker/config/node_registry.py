"""The machine's register of running nodes, what epmd is to RabbitMQ's nodes: a CLI finds a local node by its
name, whatever ports it listens on. Each node writes one small JSON file, named after its node name, into a
per-machine directory once its listeners are bound (before the ready line), and removes it when it stops.
The file holds the node name, its pid (with the process's start time, so that a reused pid is no match)
and every listener's port by RabbitMQ protocol name (``amqp``, ``clustering``, ``http``,
``http/prometheus``, ...).

epmd forgets a node whose connection drops; a file outlives a killed (SIGKILL) node instead, so a reader
checks the process: an entry whose pid is gone, or now belongs to a process started at another time, is
stale and ignored (and overwritten by the next node of that name). Readers never delete entries: a node
starting under the same name may be replacing the file at that moment.

The directory: ``$WARRENMQ_REGISTRY_DIR`` when set (tests isolate themselves with it), else
``<temp dir>/warrenmq-nodes``, world-writable with the sticky bit like /tmp itself, so that any user's CLI
finds any user's node, as epmd answers everyone; the Erlang cookie still decides who may talk to it."""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV = "WARRENMQ_REGISTRY_DIR"
_SHARED_MODE = 0o1777  # rwx for all, sticky: only an entry's owner may replace or remove it


@dataclass(frozen=True)
class Entry:
    node: str
    pid: int
    started: str | None  # the process's start time in clock ticks since boot (/proc/PID/stat), if known
    host: str  # the interface the node's listeners bind (``::`` for all), RabbitMQ's listener interface
    ports: dict[str, int] = field(default_factory=dict)  # protocol -> port


def registry_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    configured = env.get(ENV)
    return Path(configured) if configured else _temporary_dir(env) / "warrenmq-nodes"


def _temporary_dir(env: Mapping[str, str]) -> Path:
    """tempfile.gettempdir()'s answer for the usual cases ($TMPDIR, $TEMP, $TMP, else /tmp), without importing
    tempfile: it brings shutil and its archive modules, which `serve` does not load at start."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        if env.get(name) and os.path.isdir(env[name]):
            return Path(env[name])
    return Path("/tmp")


def entry_path(node: str, directory: Path) -> Path:
    # Node names are name@host; anything else a file name cannot hold is percent-encoded.
    return directory / f"{urllib.parse.quote(node, safe='@.-_+')}.json"


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat from its third field (the state) on; None where /proc cannot tell."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count fields after its last ')'.
    return stat[stat.rfind(")") + 2 :].split()


def process_started(pid: int) -> str | None:
    """The start time of process ``pid`` (field 22 of /proc/PID/stat), None where /proc cannot tell."""
    fields = _stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def alive(entry: Entry) -> bool:
    """Whether the entry's process still runs: the same pid, started at the same time, not a zombie (a
    killed node whose parent has not reaped it yet still has its pid)."""
    try:
        os.kill(entry.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    fields = _stat_fields(entry.pid)
    if fields is None or len(fields) <= 19:
        return True
    if fields[0] in ("Z", "X"):
        return False
    return entry.started is None or fields[19] == entry.started


def _parse(text: str) -> Entry | None:
    try:
        data: Any = json.loads(text)
        return Entry(
            node=str(data["node"]),
            pid=int(data["pid"]),
            started=None if data.get("started") is None else str(data["started"]),
            host=str(data.get("host", "")),
            ports={str(key): int(value) for key, value in dict(data.get("ports", {})).items()},
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def lookup(node: str, directory: Path | None = None) -> Entry | None:
    """The live entry of ``node``; None when there is none, it is stale or unreadable."""
    path = entry_path(node, registry_dir() if directory is None else directory)
    try:
        entry = _parse(path.read_text())
    except OSError:
        return None
    if entry is None or entry.node != node or not alive(entry):
        return None
    return entry


def _prepare(directory: Path, shared: bool) -> None:
    if shared:
        try:
            directory.mkdir(mode=_SHARED_MODE)
            os.chmod(directory, _SHARED_MODE)  # mkdir's mode is filtered by the umask
        except FileExistsError:
            pass
        if directory.is_symlink() or not directory.is_dir():
            raise OSError(f"{directory} is not a directory")
    else:
        directory.mkdir(parents=True, exist_ok=True)


def register(node: str, host: str, ports: Mapping[str, int], directory: Path | None = None) -> Path:
    """Write this process's entry for ``node`` atomically (a reader sees the old file or the new one, never
    part of one); its path. OSError when the directory cannot take it."""
    shared = directory is None and ENV not in os.environ
    where = registry_dir() if directory is None else directory
    _prepare(where, shared)
    entry = {
        "node": node,
        "pid": os.getpid(),
        "started": process_started(os.getpid()),
        "host": host,
        "ports": dict(ports),
    }
    path = entry_path(node, where)
    # Written beside, then renamed. The name is this process's own; O_EXCL and O_NOFOLLOW refuse a file or
    # link someone else put there (the shared directory is world-writable); a leftover of ours is replaced.
    temporary = where / f".{path.stem}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        fd = os.open(temporary, flags, 0o644)
    except FileExistsError:
        temporary.unlink()
        fd = os.open(temporary, flags, 0o644)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(entry, handle)
        os.chmod(temporary, 0o644)  # the umask may have narrowed it: other users' CLIs read the entry
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def unregister(path: Path) -> None:
    """Remove this process's entry, unless another node of the same name has replaced it since."""
    try:
        entry = _parse(path.read_text())
    except OSError:
        return
    if entry is not None and entry.pid == os.getpid():
        path.unlink(missing_ok=True)
