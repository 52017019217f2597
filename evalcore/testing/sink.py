"""A host that must never be reached, for tests that prove the server's key stays home (evalcore.judge.trust).

``Attacker`` listens on loopback, records every byte any client sends it (an HTTP request with its Authorization
header, a TLS hello, anything) and answers 500. A test points a link, a field or a recorded run at it and then
asserts ``connections == 0`` (or that a canary key is not in ``seen``). Never a judge, never a default.
"""

from __future__ import annotations

import socket
import threading


class Attacker:
    """A host that must never be reached: a raw TCP listener on loopback that records every byte any client sends
    (an HTTP request, a TLS hello, anything) and answers 500. ``seen`` is the bytes; ``connections`` the count."""

    # what every connection is answered with
    ANSWER = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.seen = b""
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            self.connections += 1
            conn.settimeout(1.0)
            try:
                self.seen += conn.recv(65536)
                conn.sendall(self.answer())
            except OSError:
                pass
            finally:
                conn.close()

    def answer(self) -> bytes:
        return self.ANSWER

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._sock.close()

    def __enter__(self) -> "Attacker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Redirector(Attacker):
    """A configured endpoint gone bad: answers every request with ``status`` (a 307 or 308 keeps the method and body,
    so a client that follows it re-sends the whole prompt) pointing at ``location``."""

    def __init__(self, location: str, status: int = 307) -> None:
        self.location = location
        self.status = status
        super().__init__()

    def answer(self) -> bytes:
        return (f"HTTP/1.1 {self.status} Redirect\r\nlocation: {self.location}\r\ncontent-length: 0\r\n"
                "connection: close\r\n\r\n").encode()
