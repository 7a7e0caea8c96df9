"""rabbitmqctl's vhost and user limit commands, with RabbitMQ 3.10's banners, output, error texts and exit
codes, through the management API's /api/vhost-limits and /api/user-limits (one limit a call: the CLI's
definition replaces the whole set, as rabbit_vhost_limit:set/3 and rabbit_auth_backend_internal do)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from broker.ctl.api import Api, ApiFailure, quote
from broker.ctl.options import Options, Output
from broker.ctl.policies import no_vhost, print_table

EX_UNAVAILABLE = 69


def _fail(out: Output, text: str, code: int) -> int:
    out.error(f"Error:\n{text}")
    return code


def _definition(out: Output, text: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        out.error("Error:\nJSON decoding error. Reason: badarg")
        return None
    return parsed


def _held(api: Api, path: str) -> dict[str, Any]:
    try:
        rows = api.get(path)
    except ApiFailure as error:
        if error.status != 404:
            raise
        return {}
    value = rows[0]["value"] if rows else {}
    return dict(value) if isinstance(value, dict) else {}


def _replace(api: Api, base: str, held: dict[str, Any], wanted: dict[str, Any]) -> None:
    for name, value in wanted.items():
        api.call("PUT", f"{base}/{quote(name)}", {"value": value})
    for name in held:
        if name not in wanted:
            api.call("DELETE", f"{base}/{quote(name)}")


def _json_line(value: Any) -> str:
    """Limits print as a JSON object in key order (an Erlang map's order)."""
    return json.dumps(dict(sorted(value.items())) if isinstance(value, dict) else {}, separators=(",", ":"))


def _no_user(out: Output, user: str) -> int:
    return _fail(out, f'{{:no_such_user, "{user}"}}', EX_UNAVAILABLE)


def set_vhost_limits(api: Api, o: Options, out: Output) -> int:
    text = o.args[0]
    out.banner(f'Setting vhost limits to "{text}" for vhost "{o.vhost}" ...')
    wanted = _definition(out, text)
    if wanted is None:
        return EX_UNAVAILABLE
    base = f"/api/vhost-limits/{quote(o.vhost)}"
    try:
        _replace(api, base, _held(api, base), wanted)
    except ApiFailure as error:
        if error.status == 404:
            return no_vhost(out, o.vhost)
        if error.status == 400:
            return _fail(out, error.reason.rstrip("\n"), EX_UNAVAILABLE)
        raise
    return 0


def clear_vhost_limits(api: Api, o: Options, out: Output) -> int:
    out.banner(f'Clearing vhost "{o.vhost}" limits ...')
    base = f"/api/vhost-limits/{quote(o.vhost)}"
    try:
        _replace(api, base, _held(api, base), {})
    except ApiFailure as error:
        if error.status != 404:
            raise
        return no_vhost(out, o.vhost)
    return 0


def list_vhost_limits(api: Api, o: Options, out: Output) -> int:
    if "--global" in o.flags:
        out.banner("Listing limits for all vhosts ...")
        rows = [{"vhost": r["vhost"], "limits": _json_line(r["value"])} for r in api.get("/api/vhost-limits")]
        print_table(o, rows, ("vhost", "limits"))
        return 0
    out.banner(f'Listing limits for vhost "{o.vhost}" ...')
    try:
        rows = api.get(f"/api/vhost-limits/{quote(o.vhost)}")
    except ApiFailure as error:
        if error.status != 404:
            raise
        return no_vhost(out, o.vhost)
    # A vhost without limits prints an empty line.
    print(_json_line(rows[0]["value"]) if rows and rows[0]["value"] else "")
    return 0


def set_user_limits(api: Api, o: Options, out: Output) -> int:
    user, text = o.args[0], o.args[1]
    out.banner(f'Setting user limits to "{text}" for user "{user}" ...')
    wanted = _definition(out, text)
    if wanted is None:
        return EX_UNAVAILABLE
    base = f"/api/user-limits/{quote(user)}"
    try:
        _replace(api, base, _held(api, base), wanted)
    except ApiFailure as error:
        if error.status == 400 and "no_such_user" in error.reason:
            return _no_user(out, user)
        if error.status == 400:
            return _fail(out, error.reason.rstrip("\n"), EX_UNAVAILABLE)
        raise
    return 0


def clear_user_limits(api: Api, o: Options, out: Output) -> int:
    user, name = o.args[0], o.args[1]
    if name == "all":
        out.banner(f'Clearing all limits for user "{user}" ...')
    else:
        out.banner(f'Clearing "{name}" limit for user "{user}" ...')
    base = f"/api/user-limits/{quote(user)}"
    try:
        held = _held(api, base)
    except ApiFailure as error:
        if error.status != 404:
            raise
        held = {}
    if not _user_known(api, user):
        return _no_user(out, user)
    for limit in held if name == "all" else [name]:
        api.call("DELETE", f"{base}/{quote(limit)}")
    return 0


def _user_known(api: Api, user: str) -> bool:
    try:
        api.get(f"/api/users/{quote(user)}")
    except ApiFailure as error:
        if error.status == 404:
            return False
        raise
    return True


def list_user_limits(api: Api, o: Options, out: Output) -> int:
    if "--global" in o.flags:
        out.banner("Listing limits for all users ...")
        rows = [{"user": r["user"], "limits": _json_line(r["value"])} for r in api.get("/api/user-limits")]
        print_table(o, rows, ("user", "limits"))
        return 0
    user = o.user if o.user is not None else "guest"  # the CLI's default user, as RabbitMQ's
    out.banner(f'Listing limits for user "{user}" ...')
    if not _user_known(api, user):
        return _no_user(out, user)
    rows = api.get(f"/api/user-limits/{quote(user)}")
    print(_json_line(rows[0]["value"] if rows else {}))
    return 0


COMMANDS: dict[str, tuple[int, Callable[[Api, Options, Output], int]]] = {
    "set_vhost_limits": (1, set_vhost_limits),
    "clear_vhost_limits": (0, clear_vhost_limits),
    "list_vhost_limits": (0, list_vhost_limits),
    "set_user_limits": (2, set_user_limits),
    "clear_user_limits": (2, clear_user_limits),
    "list_user_limits": (0, list_user_limits),
}
