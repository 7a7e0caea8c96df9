"""A TCP proxy in front of PostgreSQL that can go silent, as a partitioned link does: no FIN, no RST, the
sockets stay open and nothing more passes either way. ``cut_after(marker)`` goes silent right after the first
client chunk containing ``marker`` has been forwarded, so a test can cut a node off at an exact point of its
protocol (after a commit's BEGIN and fence, before its COMMIT). ``close()`` ends every connection.

It only approximates a partition: the proxy's own kernel still acknowledges what each side sends (and answers
TCP keepalives), so it shows what PostgreSQL does with a client that stops talking, not what TCP does with a
peer that is gone; tests/ha/netns.py makes real partitions for that."""

from __future__ import annotations

import socket
import threading

from tests.ports import free_port


class SilentProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self.silent = threading.Event()
        self._marker: bytes | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def dsn(self, upstream_dsn: str) -> str:
        """``upstream_dsn`` through the proxy."""
        host, port = self.upstream
        return upstream_dsn.replace(f"@{host}:{port}/", f"@127.0.0.1:{self.port}/")

    def cut_after(self, marker: bytes) -> None:
        self._marker = marker

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, from_client: bool) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            if self.silent.is_set():
                # Silent: neither forwarded nor answered; stop reading so the sender's data piles up
                # unread, as it would in front of a link that carries nothing.
                return
            try:
                target.sendall(data)
            except OSError:
                return
            if from_client and self._marker is not None and self._marker in data:
                self.silent.set()

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
