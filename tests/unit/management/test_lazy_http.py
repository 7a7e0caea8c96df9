"""broker.management.lazy_http: a listener whose aiohttp application is built at the first connection."""

from __future__ import annotations

import asyncio

from aiohttp import web

from broker.management.lazy_http import LazyHTTPListener
from broker.server.sockets import listen_socket


async def _get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await writer.drain()
    try:
        answer = await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:  # closed with the request unread
        answer = b""
    writer.close()
    return answer


async def test_the_application_is_built_once_at_the_first_connection_and_serves_every_one() -> None:
    builds: list[int] = []

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def build() -> web.AppRunner:
        builds.append(1)
        # Built only once all three first connections wait for it: they arrived while it was being built.
        async with asyncio.timeout(10):
            while len(listener.lazy._waiting) < 3:
                await asyncio.sleep(0.001)
        app = web.Application()
        app.router.add_get("/hello", hello)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        return runner

    listener = LazyHTTPListener(build, "test")
    port = await listener.listen(listen_socket("127.0.0.1", 0))
    assert builds == []
    answers = await asyncio.gather(*(_get(port) for _ in range(3)))
    answers.append(await _get(port))  # after the build: handed over at once
    await listener.stop()
    assert builds == [1]
    assert [answer.split(b"\r\n", 1)[0] for answer in answers] == [b"HTTP/1.1 200 OK"] * 4
    assert all(answer.endswith(b"hello") for answer in answers)


async def test_a_failed_build_closes_the_waiting_connections() -> None:
    async def build() -> web.AppRunner:
        raise RuntimeError("no application")

    listener = LazyHTTPListener(build, "test")
    port = await listener.listen(listen_socket("127.0.0.1", 0))
    answers = await asyncio.gather(_get(port), _get(port))
    await listener.stop()
    assert list(answers) == [b"", b""]
