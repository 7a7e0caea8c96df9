"""`rabbitmqadmin`: the management plugin's HTTP client, as the rabbitmq:*-management images ship it in
/usr/local/bin. Scripts and Testcontainers for Java (RabbitMQContainer's withExchange, withQueue,
withBinding, withUser, withVhost, withPolicy, ... run `rabbitmqadmin declare ...` inside the container once
it started) call it with RabbitMQ 3.10's command line: the same options (optparse, options anywhere on the
line), the same `declare` / `delete` / `close` / `purge` / `export` / `import` argument tables and request
bodies (string "true"/"false" flags, JSON-typed fields parsed, `vhost` from --vhost), the same HTTP requests
to the management API (guest/guest on localhost:15672 by default, `~/.rabbitmqadmin.conf` or `-c`), the same
output ("queue declared"), error texts and exit codes (1 for every failure). Listing (`list`, `show`) and
messages (`publish`, `get`) are not implemented: the command says so and exits 1.
Compared with RabbitMQ's rabbitmqadmin in tests/management/test_rabbitmqadmin.py."""

from __future__ import annotations

import base64
import configparser
import http.client
import json
import os
import ssl
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from optparse import OptionParser, Values
from typing import Any, NoReturn

VERSION = "3.10.8"  # the release whose rabbitmqadmin this copies
DEFAULTS: dict[str, Any] = {
    "hostname": "localhost",
    "port": "15672",
    "node": "default",
    "path_prefix": "",
    "declare_vhost": "/",
    "username": "guest",
    "password": "guest",
    "ssl": False,
    "ssl_insecure": False,
    "ssl_disable_hostname_verification": False,
    "request_timeout": 120,
    "verbose": True,
    "format": "table",
    "depth": 1,
}


@dataclass(frozen=True)
class Shape:
    """What one object type takes: rabbitmqadmin's DECLARABLE / DELETABLE rows."""

    uri: str
    mandatory: tuple[str | tuple[str, ...], ...]
    optional: dict[str, Any] = field(default_factory=dict)
    json_fields: frozenset[str] = frozenset()


def _queue_type_argument(upload: dict[str, Any]) -> None:
    # rabbitmqadmin's queue_upload_fixup: queue_type=quorum is x-queue-type in the queue's arguments.
    if "queue_type" in upload:
        upload["arguments"] = {**upload.get("arguments", {}), "x-queue-type": upload["queue_type"]}


_BINDING = "/bindings/{vhost}/e/{source}/{destination_char}/{destination}"
_POLICY_OPTIONAL = {"priority": 0, "apply-to": None}
DECLARABLE: dict[str, Shape] = {
    "exchange": Shape(
        "/exchanges/{vhost}/{name}",
        ("name", "type"),
        {"auto_delete": "false", "durable": "true", "internal": "false", "arguments": {}},
        frozenset({"arguments"}),
    ),
    "queue": Shape(
        "/queues/{vhost}/{name}",
        ("name",),
        {"auto_delete": "false", "durable": "true", "arguments": {}, "node": None, "queue_type": None},
        frozenset({"arguments"}),
    ),
    "binding": Shape(
        _BINDING,
        ("source", "destination"),
        {"destination_type": "queue", "routing_key": "", "arguments": {}},
        frozenset({"arguments"}),
    ),
    "vhost": Shape("/vhosts/{name}", ("name",), {"tracing": None}),
    "user": Shape(
        "/users/{name}", ("name", ("password", "password_hash"), "tags"), {"hashing_algorithm": None}
    ),
    "permission": Shape("/permissions/{vhost}/{user}", ("vhost", "user", "configure", "write", "read")),
    "parameter": Shape(
        "/parameters/{component}/{vhost}/{name}", ("component", "name", "value"), {}, frozenset({"value"})
    ),
    "policy": Shape(
        "/policies/{vhost}/{name}",
        ("name", "pattern", "definition"),
        _POLICY_OPTIONAL,
        frozenset({"definition", "priority"}),
    ),
    "operator_policy": Shape(
        "/operator-policies/{vhost}/{name}",
        ("name", "pattern", "definition"),
        _POLICY_OPTIONAL,
        frozenset({"definition", "priority"}),
    ),
    "vhost_limit": Shape(
        "/vhost-limits/{vhost}/{name}", ("vhost", "name", "value"), {}, frozenset({"value"})
    ),
}
DELETABLE: dict[str, Shape] = {
    **{kind: Shape(DECLARABLE[kind].uri, ("name",)) for kind in ("exchange", "queue", "vhost", "user")},
    "binding": Shape(
        _BINDING + "/{properties_key}", ("source", "destination_type", "destination"), {"properties_key": "~"}
    ),
    "permission": Shape(DECLARABLE["permission"].uri, ("vhost", "user")),
    "parameter": Shape(DECLARABLE["parameter"].uri, ("component", "name")),
    "policy": Shape(DECLARABLE["policy"].uri, ("name",)),
    "operator_policy": Shape(DECLARABLE["operator_policy"].uri, ("name",)),
    "vhost_limit": Shape(DECLARABLE["vhost_limit"].uri, ("vhost", "name")),
}
CLOSABLE = {"connection": Shape("/connections/{name}", ("name",))}
PURGABLE = {"queue": Shape("/queues/{vhost}/{name}/contents", ("name",))}
NOT_IMPLEMENTED = ("list", "show", "publish", "get")


def _eprint(text: str) -> None:
    print(text, file=sys.stderr)


def usage_error(text: str) -> NoReturn:
    """rabbitmqadmin's assert_usage: the error, a pointer to --help, exit 1."""
    _eprint(f"\nERROR: {text}\n")
    _eprint(f"{os.path.basename(sys.argv[0])} --help for help\n")
    raise SystemExit(1)


def die(text: str) -> NoReturn:
    _eprint(f"*** {text}\n")
    raise SystemExit(1)


def make_parser() -> OptionParser:
    parser = OptionParser(usage="rabbitmqadmin [options] subcommand")

    def add(*flags: str, **kwargs: Any) -> None:
        if kwargs["dest"] in DEFAULTS and "help" in kwargs:
            kwargs["help"] += f" [default: {DEFAULTS[kwargs['dest']]}]"
        parser.add_option(*flags, **kwargs)

    add("-c", "--config", dest="config", help="configuration file [default: ~/.rabbitmqadmin.conf]")
    add("-N", "--node", dest="node", help="node described in the configuration file")
    add("-H", "--host", dest="hostname", help="connect to host HOST", metavar="HOST")
    add("-P", "--port", dest="port", help="connect to port PORT", metavar="PORT")
    add("--path-prefix", dest="path_prefix", help="use specific URI path prefix for the RabbitMQ HTTP API")
    add("-V", "--vhost", dest="vhost", help="connect to vhost VHOST", metavar="VHOST")
    add("-u", "--username", dest="username", help="connect using username USERNAME", metavar="USERNAME")
    add("-p", "--password", dest="password", help="connect using password PASSWORD", metavar="PASSWORD")
    add("-U", "--base-uri", dest="base_uri", help="connect using a base HTTP API URI", metavar="URI")
    add("-q", "--quiet", action="store_false", dest="verbose", help="suppress status messages")
    add("-s", "--ssl", action="store_true", dest="ssl", help="connect with ssl")
    add("--ssl-key-file", dest="ssl_key_file", help="PEM format key file for SSL")
    add("--ssl-cert-file", dest="ssl_cert_file", help="PEM format certificate file for SSL")
    add("--ssl-ca-cert-file", dest="ssl_ca_cert_file", help="PEM format CA certificate file for SSL")
    add(
        "--ssl-disable-hostname-verification",
        dest="ssl_disable_hostname_verification",
        action="store_true",
        help="Disables peer hostname verification",
    )
    add("-k", "--ssl-insecure", dest="ssl_insecure", action="store_true", help="Disables all SSL validations")
    add("-t", "--request-timeout", dest="request_timeout", type="int", help="HTTP request timeout in seconds")
    add("-f", "--format", dest="format", help="format for listing commands")
    add("-S", "--sort", dest="sort", help="sort key for listing queries")
    add("-R", "--sort-reverse", action="store_true", dest="sort_reverse", help="reverse the sort order")
    add("-d", "--depth", dest="depth", help="maximum depth to recurse for listing tables")
    add("--version", action="store_true", dest="version", help="Display version and exit")
    return parser


def configure(cli: Values) -> dict[str, Any]:
    """The command line over the configuration file's section over the defaults, as rabbitmqadmin merges
    them."""
    given = {key: value for key, value in vars(cli).items() if value is not None}
    options = {**DEFAULTS, **given}
    path = cli.config
    if path is None:
        home = os.getenv("USERPROFILE") or os.getenv("HOME")
        candidate = os.path.join(home, ".rabbitmqadmin.conf") if home else ""
        path = candidate if candidate and os.path.isfile(candidate) else None
    elif not os.path.isfile(path):
        usage_error(f"Could not read config file '{path}'")
    if path is not None:
        parser = configparser.ConfigParser()
        parser.read(path)
        if parser.has_section(options["node"]):
            for key, value in parser.items(options["node"]):
                if key not in given:
                    options[key] = value == "True" if value in ("True", "False") else value
        elif options["node"] != "default":
            usage_error(f"Could not read section '{options['node']}' in config file '{path}'")
    if cli.base_uri is not None:
        parsed = urllib.parse.urlparse(cli.base_uri)
        for key in ("hostname", "port", "username", "password"):
            if getattr(parsed, key) is not None:
                options[key] = getattr(parsed, key)
        if parsed.path not in ("", "/"):
            _eprint(
                "WARNING: path in --base-uri is ignored. "
                "Please specify --vhost and/or --path-prefix separately.\n"
            )
    return options


class Management:
    """One command's requests to the management API, with rabbitmqadmin's handling of each status."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def _connection(self) -> http.client.HTTPConnection:
        host, port = str(self.options["hostname"]), int(self.options["port"])
        timeout_s = float(self.options["request_timeout"])
        if not self.options["ssl"]:
            return http.client.HTTPConnection(host, port, timeout=timeout_s)
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        insecure = bool(self.options["ssl_insecure"])
        if insecure or self.options["ssl_disable_hostname_verification"]:
            context.check_hostname = False
        if insecure:
            context.verify_mode = ssl.CERT_NONE
        if self.options.get("ssl_key_file"):
            context.load_cert_chain(self.options["ssl_cert_file"], self.options["ssl_key_file"])
        if self.options.get("ssl_ca_cert_file"):
            context.load_verify_locations(self.options["ssl_ca_cert_file"])
        return http.client.HTTPSConnection(host, port, timeout=timeout_s, context=context)

    def http(self, method: str, path: str, body: str = "") -> str:
        path = f"{self.options['path_prefix']}/api{path}"
        credentials = f"{self.options['username']}:{self.options['password']}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
        if body:
            headers["Content-Type"] = "application/json"
        connection = self._connection()
        try:
            connection.request(method, path, body or None, headers)
            response = connection.getresponse()
            raw = response.read()
        except TimeoutError:
            timeout_s = self.options["request_timeout"]
            die(f"Timed out getting HTTP response (request timeout: {timeout_s} seconds)")
        except OSError as error:
            die(f"Could not connect: {error}")
        finally:
            connection.close()
        if response.status == 400:
            die(str(json.loads(raw)["reason"]))
        if response.status == 401:
            die(f"Access refused: {path}")
        if response.status == 404:
            die(f"Not found: {path}")
        if response.status > 400:
            die(f"Received response {response.status} {response.reason} for path {path}\n{raw!r}")
        return raw.decode()


def parse_object_args(args: Sequence[str], shape: Shape, vhost: str) -> tuple[str, dict[str, Any]]:
    """The request path and body from `name=value` arguments, as rabbitmqadmin's parse_args builds them."""
    upload = {key: value for key, value in shape.optional.items() if value is not None}
    names = {name for key in shape.mandatory for name in ((key,) if isinstance(key, str) else key)}
    for arg in args:
        if "=" not in arg:
            usage_error(f'Argument "{arg}" not in the name=value format')
        name, value = arg.split("=", 1)
        if name not in names and name not in shape.optional:
            usage_error(f'Argument "{name}" is not recognised')
        if name in shape.json_fields:
            try:
                upload[name] = json.loads(value)
            except ValueError:
                _eprint(f"ERROR: Could not parse JSON:\n  {value}")
                raise SystemExit(1) from None
        else:
            upload[name] = value
    for key in shape.mandatory:
        if isinstance(key, str) and key not in upload:
            usage_error(f'mandatory argument "{key}" is required')
        if isinstance(key, tuple) and not set(key) & set(upload):
            usage_error(f'one of mandatory arguments "{list(key)}" is required')
    if "vhost" not in shape.mandatory:
        upload["vhost"] = vhost
    uri_args: dict[str, Any] = {}
    for key, value in upload.items():
        if value and isinstance(value, str):
            uri_args[key] = urllib.parse.quote(value, safe="")
            if key == "destination_type":
                uri_args["destination_char"] = value[0]
    try:
        uri = shape.uri.format(**uri_args)
    except KeyError as missing:  # an empty value where the path needs one, as rabbitmqadmin's KeyError
        die(f"Could not build the request path: {missing} is empty")
    if shape is DECLARABLE["queue"]:
        _queue_type_argument(upload)
    return uri, upload


def _object_command(
    table: dict[str, Shape], verb: str, send: Callable[[Management, str, str, dict[str, Any]], None]
) -> Callable[[Management, list[str]], None]:
    def run(management: Management, args: list[str]) -> None:
        if not args:
            usage_error("Type not specified")
        kind = args[0]
        if kind not in table:
            usage_error(f"Type {kind} not recognised")
        vhost = management.options.get("vhost") or management.options["declare_vhost"]
        uri, upload = parse_object_args(args[1:], table[kind], vhost)
        send(management, kind, uri, upload)
        if management.options["verbose"]:
            print(f"{kind} {verb}")

    return run


def _declare(management: Management, kind: str, uri: str, upload: dict[str, Any]) -> None:
    management.http("POST" if kind == "binding" else "PUT", uri, json.dumps(upload))


def _delete(management: Management, kind: str, uri: str, upload: dict[str, Any]) -> None:
    management.http("DELETE", uri)


def _definitions_uri(management: Management) -> str:
    vhost = management.options.get("vhost")
    return "/definitions" + (f"/{urllib.parse.quote_plus(vhost)}" if vhost else "")


def export(management: Management, args: list[str]) -> None:
    if len(args) != 1:
        usage_error("Exactly one argument required")
    definitions = management.http("GET", _definitions_uri(management))
    with open(args[0], "wb") as file:
        file.write(definitions.encode())
    if management.options["verbose"]:
        print(f'Exported definitions for {management.options["hostname"]} to "{args[0]}"')


def import_(management: Management, args: list[str]) -> None:
    if len(args) != 1:
        usage_error("Exactly one argument required")
    with open(args[0], "rb") as file:
        definitions = file.read().decode()
    management.http("POST", _definitions_uri(management), definitions)
    if management.options["verbose"]:
        print(
            f'Uploaded definitions from "{management.options["hostname"]}" to {args[0]}. The import process '
            "may take some time. Consult server logs to track progress."
        )


ACTIONS: dict[str, Callable[[Management, list[str]], None]] = {
    "declare": _object_command(DECLARABLE, "declared", _declare),
    "delete": _object_command(DELETABLE, "deleted", _delete),
    "close": _object_command(CLOSABLE, "closed", _delete),
    "purge": _object_command(PURGABLE, "purged", _delete),
    "export": export,
    "import": import_,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    cli, args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if cli.version:
        print(f"rabbitmqadmin {VERSION}")
        return 0
    options = configure(cli)
    if not args:
        usage_error("Action not specified")
    if args[0] == "help":
        parser.print_help()
        return 0
    if args[0] in NOT_IMPLEMENTED:
        die(
            f"'{args[0]}' is not implemented by WarrenMQ's rabbitmqadmin: GET the HTTP API's /api/... instead"
        )
    action = ACTIONS.get(args[0])
    if action is None:
        usage_error(f"Action {args[0]} not understood")
    action(Management(options), list(args[1:]))
    return 0
