"""A slow and lossy link as a TCP proxy, for a kernel without ``sch_netem`` (and without NFQUEUE): run in the
database's network namespace in front of PostgreSQL, it holds every chunk it relays, either way, for
``delay_s`` (200 ms: a long-distance link), and with ``loss`` probability (5 %) holds it ``stall_s`` longer
(uniform, 200-300 ms by default). That is what a lost segment looks like to the application over TCP: not a
gap but a late arrival, after the sender's retransmission timeout (Linux's minimum RTO is 200 ms), with
everything behind it held up too (TCP delivers in order; so does the proxy). The connection is never reset.

    python -m tests.ha.slow_link LISTEN_HOST:PORT UPSTREAM_HOST:PORT [--delay-s 0.2] [--loss 0.05]
        [--stall-s 0.2 0.3] [--seed N]

With ``--start-fast`` it relays at once until SIGUSR1 makes the link slow (SIGUSR2 makes it fast again), so
a schedule can degrade the link of a running pair and restore it. It prints ``listening`` once it accepts
connections, and, when stopped with SIGTERM, how many chunks it relayed and how many it stalled."""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
from dataclasses import dataclass


@dataclass
class Link:
    delay_s: float
    loss: float
    stall_s: tuple[float, float]
    rng: random.Random
    slow: bool = True
    chunks: int = 0
    stalls: int = 0

    def hold_s(self) -> float:
        """How long the next chunk is held: the link's delay, plus a retransmission when it is 'lost'."""
        if not self.slow:
            return 0.0
        self.chunks += 1
        if self.rng.random() < self.loss:
            self.stalls += 1
            return self.delay_s + self.rng.uniform(*self.stall_s)
        return self.delay_s


async def _relay(link: Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Chunks from ``reader`` to ``writer``, each due ``hold_s`` after it arrived and never before the one
    ahead of it (in order, as TCP delivers)."""
    loop = asyncio.get_running_loop()
    due: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            at, data = await due.get()
            if not data:
                break
            wait_s = at - loop.time()
            if wait_s > 0:
                await asyncio.sleep(wait_s)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.ensure_future(send())
    last = 0.0
    try:
        while data := await reader.read(65536):
            last = max(last, loop.time() + link.hold_s())
            due.put_nowait((last, data))
    except OSError:
        pass
    due.put_nowait((last, b""))
    try:
        await sender
    except OSError:
        pass


async def _serve(link: Link, listen: tuple[str, int], upstream: tuple[str, int]) -> None:
    async def accepted(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*upstream)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            _relay(link, client_reader, server_writer),
            _relay(link, server_reader, client_writer),
            return_exceptions=True,
        )

    server = await asyncio.start_server(accepted, *listen)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, lambda: setattr(link, "slow", True))
    loop.add_signal_handler(signal.SIGUSR2, lambda: setattr(link, "slow", False))
    print("listening", flush=True)
    async with server:
        await stop.wait()
    print(f"relayed {link.chunks} chunks, stalled {link.stalls}", flush=True)


def _address(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.ha.slow_link")
    parser.add_argument("listen", type=_address)
    parser.add_argument("upstream", type=_address)
    parser.add_argument("--delay-s", type=float, default=0.2)
    parser.add_argument("--loss", type=float, default=0.05)
    parser.add_argument("--stall-s", type=float, nargs=2, default=(0.2, 0.3))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-fast", action="store_true")
    args = parser.parse_args(argv)
    link = Link(args.delay_s, args.loss, tuple(args.stall_s), random.Random(args.seed), not args.start_fast)
    asyncio.run(_serve(link, args.listen, args.upstream))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
