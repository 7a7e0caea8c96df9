"""rabbitmq-env.conf merged under the environment, as RabbitMQ's scripts read it (rabbitmq-env.conf(5)):
RABBITMQ_CONF_ENV_FILE (default ``/etc/rabbitmq/rabbitmq-env.conf``) holds shell assignments whose names
are the environment variables' without the ``RABBITMQ_`` prefix (``NODE_PORT=5673``); a variable set and
non-empty in the environment wins over the file, which wins over the defaults. The file is sourced by
RabbitMQ with /bin/sh; here the assignments are read (``export``, quotes and ``$VAR`` references
included), without running anything."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path

from broker.config.sysctl import ConfigFileError

PREFIX = "RABBITMQ_"
ENV_FILE = "RABBITMQ_CONF_ENV_FILE"


# Pattern strings: re compiles each at its first use and caches it, so none compiles at import.
_ASSIGNMENT = r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)"
_REFERENCE = r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))"


class MergedEnviron(Mapping[str, str]):
    """The environment with rabbitmq-env.conf's values under it; ``origin`` says which file line a value
    came from (for `warrenmq config show`)."""

    def __init__(self, environ: Mapping[str, str], from_file: dict[str, tuple[str, str]], path: str) -> None:
        self.environ = environ
        self.from_file = from_file  # RABBITMQ_NAME -> (value, "path:line NAME")
        self.path = path

    def __getitem__(self, name: str) -> str:
        if self.environ.get(name):
            return self.environ[name]
        if name in self.from_file:
            return self.from_file[name][0]
        return self.environ[name]

    def __iter__(self) -> Iterator[str]:
        yield from self.environ
        yield from (name for name in self.from_file if name not in self.environ)

    def __len__(self) -> int:
        return len(set(self.environ) | set(self.from_file))

    def origin(self, name: str) -> str:
        if not self.environ.get(name) and name in self.from_file:
            return self.from_file[name][1]
        return f"env {name}"


def conf_env_file_path(environ: Mapping[str, str]) -> str:
    prefix = environ.get("WARRENMQ_SYS_PREFIX", "").rstrip("/")
    return environ.get(ENV_FILE) or f"{prefix}/etc/rabbitmq/rabbitmq-env.conf"


def _expand(text: str, known: Mapping[str, str]) -> str:
    return re.sub(_REFERENCE, lambda m: known.get(m.group(1) or m.group(2), ""), text)


def read_conf_env_file(path: str, environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """RABBITMQ_NAME -> (value, source) for each assignment of the file (later ones win); an absent file is
    empty, as for RabbitMQ."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ConfigFileError(path, 0, f"cannot read: {error.strerror}") from None
    found: dict[str, tuple[str, str]] = {}
    shell: dict[str, str] = dict(environ)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(_ASSIGNMENT, line)
        if match is None:
            continue  # other shell (conditionals, commands): RabbitMQ runs it, WarrenMQ does not
        name, value = match.group(1), match.group(2)
        try:
            words = shlex.split(value, comments=True)
        except ValueError as error:
            raise ConfigFileError(path, number, f"{name}: {error}") from None
        # Single-quoted text is literal in sh; expanding every word is close enough for paths and ports.
        expanded = _expand(" ".join(words), shell)
        shell[name] = expanded
        full = name if name.startswith(PREFIX) else PREFIX + name
        found[full] = (expanded, f"{path}:{number} {name}")
    return found


def merged_environ(environ: Mapping[str, str]) -> MergedEnviron:
    path = conf_env_file_path(environ)
    return MergedEnviron(environ, read_conf_env_file(path, environ), path)
