"""RabbitMQ's "new style" configuration format (rabbitmq.conf, read by cuttlefish): ``key = value`` lines.

Cuttlefish's grammar (conf_parse.peg): blank lines and lines starting with ``#`` are skipped; a setting is
``key = value`` where the key is dot-separated words and the value runs to the end of the line or to a
``#`` that starts a trailing comment; a later setting of the same key replaces an earlier one. Anything
else stops RabbitMQ at boot, and stops WarrenMQ with the file, the line and the reason.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Pattern strings: re compiles each at its first use and caches it, so none compiles at import.
_KEY = r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-@$/:*]+)*"
_SIZE = r"(\d+)\s*([A-Za-z]*)"


# Information units as rabbitmq.conf accepts them (configure.html "memory threshold"): powers of two for
# k/kiB, M/MiB, G/GiB (also T/TiB here), powers of ten for kB, MB, GB.
_UNITS = {
    "": 1,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tib": 1024**4,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
}


class ConfigFileError(Exception):
    """A configuration file that cannot be used: names the file, the line (0 = the whole file) and why."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        where = f"{path}, line {line}" if line else path
        super().__init__(f"{where}: {reason}")
        self.path, self.line, self.reason = path, line, reason


# A NamedTuple, not a dataclass: start-up cost.
class Entry(NamedTuple):
    key: str
    value: str
    path: str
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def parse_sysctl(text: str, path: str) -> list[Entry]:
    """Every setting of one file, in file order (duplicates kept: the caller lets the last one win)."""
    entries: list[Entry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, rest = line.partition("=")
        key = key.strip()
        value = rest.split("#", 1)[0].strip()
        if not sep:
            raise ConfigFileError(path, number, f"syntax error: expected 'key = value', got {line!r}")
        if not re.fullmatch(_KEY, key):
            raise ConfigFileError(path, number, f"syntax error: invalid key {key!r}")
        if not value:
            raise ConfigFileError(path, number, f"syntax error: no value for {key!r}")
        entries.append(Entry(key, value, path, number))
    return entries


def parse_size(text: str) -> int | None:
    """Bytes from ``1073741824``, ``2GB``, ``512MiB``; None when the text is not a size."""
    match = re.fullmatch(_SIZE, text.strip())
    if match is None:
        return None
    factor = _UNITS.get(match.group(2).lower())
    return None if factor is None else int(match.group(1)) * factor


def parse_bool(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text.strip().lower())
