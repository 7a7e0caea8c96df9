"""The RabbitMQ management HTTP API subset WarrenMQ answers (field names as RabbitMQ's JSON), with the
readiness endpoint and the connection-close fault injection (`DELETE /api/connections/{name}`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker import __version__
from broker.core.snapshot import binding_infos, exchange_infos, queue_infos
from broker.management.definitions import export_definitions
from broker.management.http import Request, Response, basic_auth
from protocol.connection import ConnectionState

if TYPE_CHECKING:
    from broker.core.vhost import VirtualHost
    from broker.server.listener import Server

NODE = "warrenmq@localhost"
NOT_FOUND = Response(404, {"error": "Object Not Found", "reason": "Not Found"})
OK = {"status": "ok"}


class ManagementAPI:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.broker = server.broker
        self.http_port = 0

    async def handle(self, request: Request) -> Response:
        segments = request.segments
        if segments == ["ready"]:
            return Response(200, OK)  # unauthenticated readiness probe: the AMQP port is bound by now
        credentials = basic_auth(request.headers)
        if credentials is None or not self.broker.authenticate(*credentials):
            return Response(
                401,
                {"error": "not_authorised", "reason": "Login failed"},
                {"www-authenticate": 'Basic realm="RabbitMQ Management"'},
            )
        request.user = credentials[0]
        if not segments or segments[0] != "api":
            return NOT_FOUND
        resource = segments[1].replace("-", "_") if len(segments) > 1 else "root"
        route = getattr(self, f"_{request.method.lower()}_{resource}", None)
        if route is None:
            return Response(405, {"error": "Method Not Allowed", "reason": "Method Not Allowed"})
        response: Response = route(request, segments[2:])
        return response

    # -- helpers

    def _vhosts(self, args: list[str]) -> list[VirtualHost] | None:
        if not args:
            return list(self.broker.vhosts.values())
        vhost = self.broker.vhosts.get(args[0])
        return [vhost] if vhost is not None else None

    def _open_connections(self) -> list[Any]:
        return [
            protocol
            for protocol in self.server.connections
            if protocol.session is not None and protocol.session.state is ConnectionState.OPEN
        ]

    # -- GET

    def _get_overview(self, request: Request, args: list[str]) -> Response:
        queues = [info for vhost in self.broker.vhosts.values() for info in queue_infos(vhost)]
        connections = self._open_connections()
        config = self.server.config
        return Response(
            200,
            {
                "management_version": __version__,
                "rabbitmq_version": __version__,
                "product_name": "WarrenMQ",
                "product_version": __version__,
                "cluster_name": NODE,
                "node": NODE,
                "object_totals": {
                    "connections": len(connections),
                    "channels": sum(len(p.session.channels) for p in connections),
                    "exchanges": sum(len(v.exchanges) for v in self.broker.vhosts.values()),
                    "queues": len(queues),
                    "consumers": sum(q.consumers for q in queues),
                },
                "queue_totals": {
                    "messages": sum(q.messages for q in queues),
                    "messages_ready": sum(q.messages_ready for q in queues),
                    "messages_unacknowledged": sum(q.messages_unacknowledged for q in queues),
                },
                "listeners": [
                    {"node": NODE, "protocol": "amqp", "ip_address": config.host, "port": self.server.port},
                    {"node": NODE, "protocol": "http", "ip_address": config.host, "port": self.http_port},
                ],
                # WarrenMQ's own: the event journal's settings and counters (drops included), null when off.
                "journal": self.server.journal.metrics() if self.server.journal is not None else None,
            },
        )

    def _get_health(self, request: Request, args: list[str]) -> Response:
        # checks/alarms (WarrenMQ has no resource alarms), checks/virtual-hosts, checks/port-listener/N
        if args[:1] == ["checks"] and len(args) >= 2:
            return Response(200, OK)
        return NOT_FOUND

    def _get_aliveness_test(self, request: Request, args: list[str]) -> Response:
        if len(args) != 1 or args[0] not in self.broker.vhosts:
            return NOT_FOUND
        return Response(200, OK)

    def _get_queues(self, request: Request, args: list[str]) -> Response:
        vhosts = self._vhosts(args)
        if vhosts is None:
            return NOT_FOUND
        rows = [_queue_json(info) for vhost in vhosts for info in queue_infos(vhost)]
        if len(args) >= 2:
            found = [row for row in rows if row["name"] == args[1]]
            return Response(200, found[0]) if found else NOT_FOUND
        return Response(200, rows)

    def _get_exchanges(self, request: Request, args: list[str]) -> Response:
        vhosts = self._vhosts(args)
        if vhosts is None:
            return NOT_FOUND
        rows = [
            {
                "name": info.name,
                "vhost": info.vhost,
                "type": info.type,
                "durable": info.durable,
                "auto_delete": info.auto_delete,
                "internal": info.internal,
                "arguments": info.arguments,
                "user_who_performed_action": "rmq-internal",
            }
            for vhost in vhosts
            for info in exchange_infos(vhost)
        ]
        if len(args) >= 2:
            found = [row for row in rows if row["name"] == args[1]]
            return Response(200, found[0]) if found else NOT_FOUND
        return Response(200, rows)

    def _get_bindings(self, request: Request, args: list[str]) -> Response:
        vhosts = self._vhosts(args)
        if vhosts is None:
            return NOT_FOUND
        rows = [
            {
                "source": info.source,
                "vhost": info.vhost,
                "destination": info.destination,
                "destination_type": info.destination_type,
                "routing_key": info.routing_key,
                "arguments": info.arguments,
                "properties_key": info.routing_key or "~",
            }
            for vhost in vhosts
            for info in binding_infos(vhost)
        ]
        return Response(200, rows)

    def _get_connections(self, request: Request, args: list[str]) -> Response:
        rows = [_connection_json(protocol) for protocol in self._open_connections()]
        if args:
            found = [row for row in rows if row["name"] == args[0]]
            return Response(200, found[0]) if found else NOT_FOUND
        return Response(200, rows)

    def _get_vhosts(self, request: Request, args: list[str]) -> Response:
        rows = []
        for name, vhost in sorted(self.broker.vhosts.items()):
            infos = queue_infos(vhost)
            rows.append(
                {
                    "name": name,
                    "description": "",
                    "tags": [],
                    "tracing": False,
                    "messages": sum(q.messages for q in infos),
                    "messages_ready": sum(q.messages_ready for q in infos),
                    "messages_unacknowledged": sum(q.messages_unacknowledged for q in infos),
                }
            )
        if args:
            found = [row for row in rows if row["name"] == args[0]]
            return Response(200, found[0]) if found else NOT_FOUND
        return Response(200, rows)

    def _get_definitions(self, request: Request, args: list[str]) -> Response:
        return Response(200, export_definitions(self.broker))

    # -- changes

    def _put_vhosts(self, request: Request, args: list[str]) -> Response:
        if len(args) != 1:
            return NOT_FOUND
        existed = args[0] in self.broker.vhosts
        self.broker.add_vhost(args[0])
        return Response(204 if existed else 201)

    def _delete_vhosts(self, request: Request, args: list[str]) -> Response:
        if len(args) != 1 or not self.broker.delete_vhost(args[0]):
            return NOT_FOUND
        return Response(204)

    def _delete_connections(self, request: Request, args: list[str]) -> Response:
        """Force-close with 320; the reason is the `X-Reason` header, else RabbitMQ's default text."""
        if len(args) != 1:
            return NOT_FOUND
        reason = request.headers.get("x-reason") or "Closed via management plugin"
        for protocol in self._open_connections():
            if protocol.name == args[0]:
                protocol.session.force_close(reason)
                return Response(204)
        return NOT_FOUND


def _queue_json(info: Any) -> dict[str, Any]:
    return {
        "name": info.name,
        "vhost": info.vhost,
        "durable": info.durable,
        "auto_delete": info.auto_delete,
        "exclusive": info.exclusive,
        "arguments": info.arguments,
        "messages": info.messages,
        "messages_ready": info.messages_ready,
        "messages_unacknowledged": info.messages_unacknowledged,
        "consumers": info.consumers,
        "state": "running",
        "type": "classic",
        "node": NODE,
    }


def _connection_json(protocol: Any) -> dict[str, Any]:
    session = protocol.session
    transport = protocol.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    local = transport.get_extra_info("sockname") if transport is not None else None
    return {
        "name": protocol.name,
        "vhost": session.vhost.name if session.vhost is not None else "",
        "user": session.username,
        "state": "running",
        "channels": len(session.channels),
        "protocol": "AMQP 0-9-1",
        "auth_mechanism": session.mechanism,
        "peer_host": peer[0] if isinstance(peer, tuple) else "",
        "peer_port": peer[1] if isinstance(peer, tuple) else 0,
        "host": local[0] if isinstance(local, tuple) else "",
        "port": local[1] if isinstance(local, tuple) else 0,
        "frame_max": session.frame_max,
        "channel_max": session.channel_max,
        "timeout": session.heartbeat.interval_s,
        "client_properties": session.client_properties,
        "node": NODE,
    }
