"""rabbitmqctl's policy, operator policy, topic permission and tracing commands, with RabbitMQ 3.10's
banners, listing columns, error texts and exit codes, through the management API's /api/policies,
/api/operator-policies, /api/topic-permissions and the vhost's ``tracing`` flag."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from broker.ctl.api import Api, ApiFailure, quote
from broker.ctl.options import Options, Output
from broker.ctl.tables import render

EX_USAGE, EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE = 64, 65, 67, 69
_POLICY_COLUMNS = ("vhost", "name", "pattern", "apply-to", "definition", "priority")


def _fail(out: Output, text: str, code: int) -> int:
    out.error(f"Error:\n{text}")
    return code


def print_table(o: Options, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    """RabbitMQ 3.10 prints an empty line for an empty table listing."""
    formatter = "table" if o.formatter == "string" else o.formatter
    print(render(rows, columns, formatter, headers=not (o.silent or o.no_table_headers)))


def no_vhost(out: Output, vhost: str) -> int:
    """A missing vhost is a data error without the "Error:" heading (the CLI's own vhost check)."""
    out.error(f"Virtual host '{vhost}' does not exist")
    return EX_DATAERR


def _vhost_exists(api: Api, name: str) -> bool:
    return any(item["name"] == name for item in api.get("/api/vhosts"))


def _user_exists(api: Api, name: str) -> bool:
    try:
        api.get(f"/api/users/{quote(name)}")
    except ApiFailure as error:
        if error.status == 404:
            return False
        raise
    return True


def _validation(error: ApiFailure) -> str:
    """The API's "Validation failed\\n\\n<reasons>\\n" is what rabbit_policy returns to the CLI; 3.10
    knows three apply-to values (the API takes 3.12's queue kinds too)."""
    reason = error.reason.replace("&lt;", "<").replace("&gt;", ">").rstrip("\n")
    if reason.startswith("Validation failed\n\napply-to '") and "unrecognised" in reason:
        head = reason.split(" unrecognised", 1)[0]
        return f"{head} unrecognised; should be 'queues', 'exchanges' or 'all'"
    return reason


def _set_policy(api: Api, o: Options, out: Output, base: str, what: str) -> int:
    name, pattern, definition = o.args[0], o.args[1], o.args[2]
    out.banner(
        f'Setting {what} "{name}" for pattern "{pattern}" to "{definition}" with priority '
        f'"{o.priority}" for vhost "{o.vhost}" ...'
    )
    try:
        parsed = json.loads(definition)
    except ValueError:
        return _fail(out, "JSON decoding error. Reason: badarg", EX_UNAVAILABLE)
    try:
        priority = int(o.priority)
    except ValueError:
        return _fail(out, f'Validation failed\n\npriority "{o.priority}" is not an integer', EX_DATAERR)
    if not _vhost_exists(api, o.vhost):
        return no_vhost(out, o.vhost)
    body = {"pattern": pattern, "definition": parsed, "priority": priority, "apply-to": o.apply_to}
    try:
        api.call("PUT", f"{base}/{quote(o.vhost)}/{quote(name)}", body)
    except ApiFailure as error:
        if error.status != 400:
            raise
        return _fail(out, _validation(error), EX_UNAVAILABLE)
    return 0


def _clear_policy(api: Api, o: Options, out: Output, base: str, what: str) -> int:
    name = o.args[0]
    out.banner(f'Clearing {what} "{name}" on vhost "{o.vhost}" ...')
    try:
        api.call("DELETE", f"{base}/{quote(o.vhost)}/{quote(name)}")
    except ApiFailure as error:
        if error.status != 404:
            raise
        return _fail(out, "Parameter does not exist", EX_UNAVAILABLE)
    return 0


def _list_policies(api: Api, o: Options, out: Output, base: str, what: str) -> int:
    out.banner(f'Listing {what} for vhost "{o.vhost}" ...')
    try:
        rows = api.get(f"{base}/{quote(o.vhost)}")
    except ApiFailure as error:
        if error.status != 404:
            raise
        return no_vhost(out, o.vhost)
    shown = [{**row, "definition": json.dumps(row["definition"], separators=(",", ":"))} for row in rows]
    print_table(o, shown, _POLICY_COLUMNS)
    return 0


def set_topic_permissions(api: Api, o: Options, out: Output) -> int:
    user, exchange, write, read = o.args[0], o.args[1], o.args[2], o.args[3]
    out.banner(f'Setting topic permissions on "{exchange}" for user "{user}" in vhost "{o.vhost}" ...')
    if not _vhost_exists(api, o.vhost):
        return _fail(out, f"Virtual host {o.vhost} does not exist", EX_UNAVAILABLE)
    if not _user_exists(api, user):
        return _fail(out, f"User {user} does not exist", EX_NOUSER)
    body = {"exchange": exchange, "write": write, "read": read}
    api.call("PUT", f"/api/topic-permissions/{quote(o.vhost)}/{quote(user)}", body)
    return 0


def clear_topic_permissions(api: Api, o: Options, out: Output) -> int:
    user = o.args[0]
    on = f' on "{o.args[1]}"' if len(o.args) > 1 else ""
    out.banner(f'Clearing topic permissions{on} for user "{user}" in vhost "{o.vhost}" ...')
    if not _user_exists(api, user):
        return _fail(out, f"User {user} does not exist", EX_NOUSER)
    path = f"/api/topic-permissions/{quote(o.vhost)}/{quote(user)}"
    try:
        held = api.get(path)
        api.call("DELETE", path)
    except ApiFailure as error:
        if error.status != 404:
            raise
        return 0
    # The API clears a user's topic permissions in a vhost at once: put back the other exchanges'.
    for row in held if len(o.args) > 1 else []:
        if row["exchange"] != o.args[1]:
            body = {key: row[key] for key in ("exchange", "write", "read")}
            api.call("PUT", path, body)
    return 0


def list_topic_permissions(api: Api, o: Options, out: Output) -> int:
    out.banner(f'Listing topic permissions for vhost "{o.vhost}" ...')
    try:
        rows = api.get(f"/api/vhosts/{quote(o.vhost)}/topic-permissions")
    except ApiFailure as error:
        if error.status != 404:
            raise
        return no_vhost(out, o.vhost)
    print_table(o, rows, ("user", "exchange", "write", "read"))
    return 0


def _trace(api: Api, o: Options, out: Output, on: bool) -> int:
    out.banner(f'{"Starting" if on else "Stopping"} tracing for vhost "{o.vhost}" ...')
    try:
        vhost = api.get(f"/api/vhosts/{quote(o.vhost)}")
    except ApiFailure as error:
        if error.status != 404:
            raise
        vhost = None  # RabbitMQ 3.10 reports success for a missing vhost too, and changes nothing
    if vhost is not None:
        body = {key: vhost[key] for key in ("description", "tags") if key in vhost}
        api.call("PUT", f"/api/vhosts/{quote(o.vhost)}", {**body, "tracing": on})
    out.result(f"Trace {'enabled' if on else 'disabled'} for vhost {o.vhost}", {"result": "ok"})
    return 0


_POLICIES, _OPERATOR = "/api/policies", "/api/operator-policies"

COMMANDS: dict[str, tuple[int, Callable[[Api, Options, Output], int]]] = {
    # Policies and operator policies share their commands; only the API path and the banner's noun differ.
    "set_policy": (3, partial(_set_policy, base=_POLICIES, what="policy")),
    "clear_policy": (1, partial(_clear_policy, base=_POLICIES, what="policy")),
    "list_policies": (0, partial(_list_policies, base=_POLICIES, what="policies")),
    "set_operator_policy": (3, partial(_set_policy, base=_OPERATOR, what="operator policy override")),
    "clear_operator_policy": (1, partial(_clear_policy, base=_OPERATOR, what="operator policy")),
    "list_operator_policies": (0, partial(_list_policies, base=_OPERATOR, what="operator policy overrides")),
    "set_topic_permissions": (4, set_topic_permissions),
    "clear_topic_permissions": (1, clear_topic_permissions),
    "list_topic_permissions": (0, list_topic_permissions),
    "trace_on": (0, partial(_trace, on=True)),
    "trace_off": (0, partial(_trace, on=False)),
}
