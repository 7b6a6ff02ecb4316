"""Loopback TCP helpers for failure tests: a proxy in front of the real server that can drop
connections and counts them, and listeners that refuse to answer."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from urllib.parse import urlsplit


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream_url``. ``drop`` decides, per accepted
    connection (numbered from 1), whether to close it at once instead of forwarding it."""

    def __init__(self, upstream_url: str, drop: Callable[[int], bool] = lambda n: False) -> None:
        u = urlsplit(upstream_url)
        self.upstream = (u.hostname or "127.0.0.1", u.port or 80)
        self.drop = drop
        self.accepted = 0
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.accepted += 1
                n = self.accepted
            if self.drop(n):
                conn.close()
                continue
            threading.Thread(target=self._forward, args=(conn,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            client.close()
            return

        def pipe(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        t = threading.Thread(target=pipe, args=(upstream, client), daemon=True)
        t.start()
        pipe(client, upstream)
        t.join(5)
        client.close()
        upstream.close()

    def close(self) -> None:
        """Stops accepting connections."""
        self._stop.set()
        self._thread.join(2)
        self._sock.close()


class SilentListener:
    """Accepts connections and never answers (each connection is held open until close)."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self.accepted = 0
        self._conns: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self._conns.append(conn)

    def close(self) -> None:
        """Closes the listener and every held connection."""
        self._stop.set()
        self._thread.join(2)
        for c in self._conns:
            c.close()
        self._sock.close()


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"
