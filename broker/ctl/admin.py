"""rabbitmqctl's user, vhost, permission, queue, definitions and connection commands, with RabbitMQ 3.10's
banners, error texts and exit codes (67 no such user, 65 data error, 69 unavailable, 70 software)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.ctl.api import Api, ApiFailure, quote
from broker.ctl.options import Options, Output
from broker.ctl.tables import render

EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE, EX_SOFTWARE = 65, 67, 69, 70


def _fail(out: Output, text: str, code: int) -> int:
    out.error(f"Error:\n{text}")
    return code


def _user(api: Api, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = api.get(f"/api/users/{quote(name)}")
    except ApiFailure as error:
        if error.status == 404:
            return None
        raise
    return found


def _tags(user: dict[str, Any]) -> list[str]:
    tags = user.get("tags", [])
    return list(tags) if isinstance(tags, list) else [t for t in str(tags).split(",") if t]


def add_user(api: Api, o: Options, out: Output) -> int:
    name, password = o.args[0], o.args[1]
    out.banner(f'Adding user "{name}" ...')
    if _user(api, name) is not None:
        return _fail(out, f'User "{name}" already exists', EX_SOFTWARE)
    api.call("PUT", f"/api/users/{quote(name)}", {"password": password, "tags": ""})
    if not (o.quiet or o.silent):
        print(
            "Done. Don't forget to grant the user permissions to some virtual hosts! "
            "See 'rabbitmqctl help set_permissions' to learn more."
        )
    return 0


def delete_user(api: Api, o: Options, out: Output) -> int:
    name = o.args[0]
    out.banner(f'Deleting user "{name}" ...')
    if _user(api, name) is None:
        return _fail(out, f'User "{name}" does not exist', EX_NOUSER)
    api.call("DELETE", f"/api/users/{quote(name)}")
    return 0


def change_password(api: Api, o: Options, out: Output) -> int:
    name, password = o.args[0], o.args[1]
    out.banner(f'Changing password for user "{name}" ...')
    user = _user(api, name)
    if user is None:
        return _fail(out, f'User "{name}" does not exist', EX_NOUSER)
    api.call("PUT", f"/api/users/{quote(name)}", {"password": password, "tags": ",".join(_tags(user))})
    return 0


def set_user_tags(api: Api, o: Options, out: Output) -> int:
    name, tags = o.args[0], list(o.args[1:])
    out.banner(f'Setting tags for user "{name}" to [{", ".join(tags)}] ...')
    user = _user(api, name)
    if user is None:
        return _fail(out, f'User "{name}" does not exist', EX_NOUSER)
    body = {"password_hash": user["password_hash"], "tags": ",".join(tags)}
    if "hashing_algorithm" in user:
        body["hashing_algorithm"] = user["hashing_algorithm"]
    api.call("PUT", f"/api/users/{quote(name)}", body)
    return 0


def authenticate_user(api: Api, o: Options, out: Output) -> int:
    """A login with the user's own credentials: refused with "Login failed" only when they are wrong (a user
    without a management tag is told "Not management user", which means the password matched)."""
    name, password = o.args[0], o.args[1]
    out.banner(f'Authenticating user "{name}" ...')
    try:
        api.call("GET", "/api/whoami", auth=(name, password))
    except ApiFailure as error:
        if error.status != 401 or error.reason == "Login failed":
            return _fail(
                out,
                f"Error: failed to authenticate user \"{name}\"\nuser '{name}' - invalid credentials",
                EX_DATAERR,
            )
    out.result("Success", {"result": "success"})
    return 0


def _found(api: Api, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[bool, Any]:
    """Whether the API had ``path`` (False on 404, which each command reports as RabbitMQ does), and its
    answer; any other failure propagates."""
    try:
        return True, api.call(method, path, headers=headers)
    except ApiFailure as error:
        if error.status != 404:
            raise
        return False, None


def add_vhost(api: Api, o: Options, out: Output) -> int:
    out.banner(f'Adding vhost "{o.args[0]}" ...')
    given = {"description": o.description, "tags": o.tags, "default_queue_type": o.default_queue_type}
    api.call("PUT", f"/api/vhosts/{quote(o.args[0])}", {k: v for k, v in given.items() if v is not None})
    return 0


def delete_vhost(api: Api, o: Options, out: Output) -> int:
    name = o.args[0]
    out.banner(f'Deleting vhost "{name}" ...')
    if not _found(api, "DELETE", f"/api/vhosts/{quote(name)}")[0]:
        out.error(f"Virtual host '{name}' does not exist")
        return EX_DATAERR
    return 0


def _vhost_exists(api: Api, name: str) -> bool:
    return any(item["name"] == name for item in api.get("/api/vhosts"))


def set_permissions(api: Api, o: Options, out: Output) -> int:
    name, configure, write, read = o.args[0], o.args[1], o.args[2], o.args[3]
    out.banner(f'Setting permissions for user "{name}" in vhost "{o.vhost}" ...')
    if not _vhost_exists(api, o.vhost):
        return _fail(out, f"Virtual host {o.vhost} does not exist", EX_UNAVAILABLE)
    if _user(api, name) is None:
        return _fail(out, f"User {name} does not exist", EX_NOUSER)
    for pattern in (configure, write, read):
        try:
            re.compile(pattern)
        except re.error as error:
            return _fail(
                out, f"{{:invalid_regexp, '{pattern}', {{'{error.msg}', {error.pos}}}}}", EX_UNAVAILABLE
            )
    body = {"configure": configure, "write": write, "read": read}
    api.call("PUT", f"/api/permissions/{quote(o.vhost)}/{quote(name)}", body)
    return 0


def clear_permissions(api: Api, o: Options, out: Output) -> int:
    name = o.args[0]
    out.banner(f'Clearing permissions for user "{name}" in vhost "{o.vhost}" ...')
    if _user(api, name) is None:
        return _fail(out, f"User {name} does not exist", EX_NOUSER)
    _found(api, "DELETE", f"/api/permissions/{quote(o.vhost)}/{quote(name)}")  # none to clear: success
    return 0


_PERMISSION_COLUMNS = ("configure", "write", "read")


def _print_table(
    o: Options, rows: list[dict[str, Any]], columns: tuple[str, ...], empty_line: bool = False
) -> None:
    formatter = "table" if o.formatter == "string" else o.formatter
    text = render(rows, columns, formatter, headers=not (o.silent or o.no_table_headers))
    if text or empty_line:
        print(text)


def list_permissions(api: Api, o: Options, out: Output) -> int:
    out.banner(f'Listing permissions for vhost "{o.vhost}" ...')
    found, rows = _found(api, "GET", f"/api/vhosts/{quote(o.vhost)}/permissions")
    if not found:
        return _fail(out, f"Virtual host {o.vhost} does not exist", EX_UNAVAILABLE)
    _print_table(o, rows, ("user", *_PERMISSION_COLUMNS))
    return 0


def list_user_permissions(api: Api, o: Options, out: Output) -> int:
    name = o.args[0]
    out.banner(f'Listing permissions for user "{name}" ...')
    if _user(api, name) is None:
        return _fail(out, f'{{:no_such_user, "{name}"}}', EX_UNAVAILABLE)
    # RabbitMQ 3.10 prints an empty line for a user with no permissions.
    rows = api.get(f"/api/users/{quote(name)}/permissions")
    _print_table(o, rows, ("vhost", *_PERMISSION_COLUMNS), empty_line=True)
    return 0


def purge_queue(api: Api, o: Options, out: Output) -> int:
    name = o.args[0]
    out.banner(f"Purging queue '{name}' in vhost '{o.vhost}' ...")
    if not _found(api, "DELETE", f"/api/queues/{quote(o.vhost)}/{quote(name)}/contents")[0]:
        return _fail(out, "not_found", EX_UNAVAILABLE)
    return 0


def delete_queue(api: Api, o: Options, out: Output) -> int:
    name = o.args[0]
    if_empty, if_unused = "--if-empty" in o.flags, "--if-unused" in o.flags
    condition = " and ".join(
        c for c, on in (("queue is empty", if_empty), ("queue is unused", if_unused)) if on
    )
    out.banner(f"Deleting queue '{name}' on vhost '{o.vhost}'{' if ' + condition if condition else ''} ...")
    path = f"/api/queues/{quote(o.vhost)}/{quote(name)}"
    try:
        queue = api.get(path)
        query = "&".join(q for q, on in (("if-empty=true", if_empty), ("if-unused=true", if_unused)) if on)
        api.call("DELETE", path + (f"?{query}" if query else ""))
    except ApiFailure as error:
        if error.status == 404:
            return _fail(out, "Queue not found", 64)
        if error.status == 400:
            reason = "is not empty" if if_empty and queue.get("messages") else "in use"
            return _fail(out, f"Queue {reason}", EX_DATAERR)
        raise
    out.result(
        f"Queue was successfully deleted with {queue.get('messages_ready', 0)} ready messages",
        {"result": "ok", "message_count": queue.get("messages_ready", 0)},
    )
    return 0


def export_definitions(api: Api, o: Options, out: Output) -> int:
    path = o.args[0]
    definitions = api.get("/api/definitions")
    if path == "-":
        print(json.dumps(definitions))
        return 0
    out.banner(f'Exporting definitions in JSON to a file at "{path}" ...')
    Path(path).write_text(json.dumps(definitions))
    return 0


def import_definitions(api: Api, o: Options, out: Output) -> int:
    path = o.args[0]
    if path == "-":
        text = sys.stdin.read()
    elif not Path(path).is_file():
        out.error(
            f"Error (argument validation): Bad argument: File {path} does not exist\n"
            f"Arguments given:\n\timport_definitions {path}"
        )
        return EX_DATAERR
    else:
        text = Path(path).read_text()
    out.banner(f'Importing definitions in JSON from a file at "{path}" ...')
    try:
        body = json.loads(text)
    except ValueError as error:
        return _fail(out, f"Failed to decode JSON: {error}", EX_DATAERR)
    api.call("POST", "/api/definitions", body)
    out.result(
        "Successfully started definition import. This process is asynchronous and can take some time.",
        {"result": "ok"},
    )
    return 0


def close_connection(api: Api, o: Options, out: Output) -> int:
    """By connection name, as list_connections name shows it (RabbitMQ takes the connection's Erlang pid)."""
    name, reason = o.args[0], o.args[1]
    out.banner(f"Closing connection {name}, reason: {reason}...")
    if not _found(api, "DELETE", f"/api/connections/{quote(name)}", {"X-Reason": reason})[0]:
        return _fail(out, f'{{:invalid_pid_syntax, "{name}"}}', EX_UNAVAILABLE)
    return 0


def close_all_connections(api: Api, o: Options, out: Output) -> int:
    reason = o.args[0]
    out.banner(f"Closing all connections in vhost {o.vhost}, reason: {reason}...")
    closed = 0
    found, connections = _found(api, "GET", f"/api/vhosts/{quote(o.vhost)}/connections")
    if not found:
        connections = []  # no such vhost: nothing to close, as RabbitMQ reports it
    for item in connections:
        try:
            api.call("DELETE", f"/api/connections/{quote(item['name'])}", headers={"X-Reason": reason})
            closed += 1
        except ApiFailure:
            pass  # closed meanwhile
    out.result(f"Closed {closed} connections", {"closed": closed})
    return 0


# name -> (minimum positional arguments, command)
COMMANDS: dict[str, tuple[int, Callable[[Api, Options, Output], int]]] = {
    "add_user": (2, add_user),
    "delete_user": (1, delete_user),
    "change_password": (2, change_password),
    "authenticate_user": (2, authenticate_user),
    "set_user_tags": (1, set_user_tags),
    "add_vhost": (1, add_vhost),
    "delete_vhost": (1, delete_vhost),
    "set_permissions": (4, set_permissions),
    "clear_permissions": (1, clear_permissions),
    "list_permissions": (0, list_permissions),
    "list_user_permissions": (1, list_user_permissions),
    "purge_queue": (1, purge_queue),
    "delete_queue": (1, delete_queue),
    "export_definitions": (1, export_definitions),
    "import_definitions": (1, import_definitions),
    "close_connection": (2, close_connection),
    "close_all_connections": (1, close_all_connections),
}
