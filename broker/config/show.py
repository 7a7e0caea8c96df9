"""`warrenmq config show`: every setting's effective value and where it came from."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from broker.config.args import Loaded
from broker.config.model import Watermark
from broker.config.plugins import started_plugins

SECRET = {"default_pass", "users"}


def _text(name: str, value: Any) -> Any:
    if name == "users" and value:
        return dict.fromkeys(value, "********")
    if name == "default_pass":
        return "********"
    if name == "store" and isinstance(value, str):  # a PostgreSQL URL's password
        parts = urlsplit(value)
        if parts.password is not None:
            return value.replace(f":{parts.password}@", ":********@", 1)
    if isinstance(value, Watermark):
        return {"kind": value.kind, "value": value.value}
    if isinstance(value, tuple):
        return list(value)
    return value


def render(loaded: Loaded, output_format: str = "table") -> str:
    rows = [(name, _text(name, r.value), r.source) for name, r in loaded.resolved.items()]
    started = started_plugins(loaded.enabled_plugins)
    plugins_file = loaded.plugins_file if loaded.enabled_plugins is not None else None
    plugins = {
        "file": plugins_file,
        "enabled": None if loaded.enabled_plugins is None else list(loaded.enabled_plugins),
        "started": started,
    }
    if output_format == "json":
        return json.dumps(
            {
                "settings": {name: {"value": value, "source": source} for name, value, source in rows},
                "config_files": loaded.files,
                "plugins": plugins,
                "warnings": loaded.warnings,
            },
            indent=2,
        )
    width = max(len(name) for name, _, _ in rows)
    values = [json.dumps(value) if not isinstance(value, str) else value for _, value, _ in rows]
    value_width = min(40, max(len(v) for v in values))
    lines = [f"{'setting':<{width}}  {'value':<{value_width}}  source"]
    lines += [
        f"{name:<{width}}  {v:<{value_width}}  {src}" for (name, _, src), v in zip(rows, values, strict=True)
    ]
    lines.append("")
    lines.append(f"config files: {', '.join(loaded.files) or '(none)'}")
    lines.append(f"enabled_plugins: {plugins_file or '(no file: every plugin WarrenMQ has)'}")
    lines.append(f"plugins started: {', '.join(started) or '(none)'}")
    lines += [f"warning: {warning}" for warning in loaded.warnings]
    return "\n".join(lines)
