"""rabbitmq_prometheus's HTTP endpoints on their own listener (15692 by default): ``/metrics`` (aggregated),
``/metrics/per-object``, ``/metrics/detailed?family=...&vhost=...``, built on prometheus-client with
collectors that read the broker at scrape time. ``/metrics/memory-breakdown`` arrived in rabbitmq_prometheus
4.1: with a 4.1+ profile it serves the node's memory breakdown (broker.management.metrics.memory_breakdown)
under 4.1's names; with the 3.13 and 4.0 profiles it answers as they do, 404 "Unknown Registry". The routes
live here, the families in broker.management.metrics.prometheus_metrics, loaded at the first scrape."""

from __future__ import annotations

from aiohttp import web

from broker.management.context import ManagementContext

# The text exposition format prometheus-client writes, labelled as rabbitmq_prometheus labels it.
CONTENT_TYPE = "text/plain; version=0.0.4"
_CONTEXT = web.AppKey("context", ManagementContext)


def _response(body: bytes) -> web.Response:
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def metrics(request: web.Request) -> web.Response:
    # The families and prometheus-client load at the first scrape, not with the listener (start-up time).
    from broker.management.metrics import prometheus_metrics

    return _response(prometheus_metrics.core(request.app[_CONTEXT], per_object=False))


async def per_object(request: web.Request) -> web.Response:
    from broker.management.metrics import prometheus_metrics

    return _response(prometheus_metrics.core(request.app[_CONTEXT], per_object=True))


async def detailed(request: web.Request) -> web.Response:
    from broker.management.metrics import prometheus_metrics

    families = request.query.getall("family", [])
    vhosts = request.query.getall("vhost", [])
    vhost = vhosts[0] if vhosts else None
    return _response(prometheus_metrics.detailed(request.app[_CONTEXT], families, vhost))


async def memory_breakdown(request: web.Request) -> web.Response:
    context = request.app[_CONTEXT]
    version = tuple(int(part) for part in context.server.config.profile.rabbitmq_version.split(".")[:2])
    if version < (4, 1):
        return await unknown_registry(request)
    from broker.management.metrics import prometheus_metrics

    return _response(prometheus_metrics.memory(context))


async def unknown_registry(request: web.Request) -> web.Response:
    return web.Response(status=404, text="Unknown Registry", content_type="text/plain")


def build_prometheus_app(context: ManagementContext) -> web.Application:
    app = web.Application()
    app[_CONTEXT] = context
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/metrics/per-object", per_object)
    app.router.add_get("/metrics/detailed", detailed)
    app.router.add_get("/metrics/memory-breakdown", memory_breakdown)
    app.router.add_get("/metrics/{registry}", unknown_registry)
    return app
