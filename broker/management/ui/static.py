"""The web UI's static files (built from ui/ into ``dist/``, shipped as package data): ``/`` and the
assets are served without login, as RabbitMQ's management plugin serves its UI; only /api asks for
credentials, so a browser shows the UI's own login form instead of a Basic-auth pop-up."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

UI_DIST = Path(__file__).with_name("dist")
_NO_UI = "<!doctype html><title>WarrenMQ</title><p>The web UI is not built: run <code>make ui</code>.</p>"


async def index(request: web.Request) -> web.StreamResponse:
    page = UI_DIST / "index.html"
    if not page.is_file():
        return web.Response(text=_NO_UI, content_type="text/html")
    # The page names hashed assets, so it must not be cached across upgrades.
    return web.FileResponse(page, headers={"Cache-Control": "no-cache"})


def add_ui_routes(app: web.Application) -> None:
    app.router.add_get("/", index)
    assets = UI_DIST / "assets"
    if assets.is_dir():
        app.router.add_static("/assets", assets)
