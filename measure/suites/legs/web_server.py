"""The web leg's loopback server: exactly the files the page needs, cross-origin isolated.

The browser leg's page fetches its script, onnxruntime-web's wasm build, the tier's
graph files and its request over HTTP from this server. It listens on 127.0.0.1 only,
on a port the OS picks, and answers only paths that were registered one by one: a
request path is looked up verbatim, never joined onto a folder, so no ``..`` or
encoded separator can reach another file. Every answer carries COOP/COEP (the page is
then cross-origin isolated, which onnxruntime-web needs for its threads), a strict
content security policy and ``no-store``.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",
}
"""Anything else (graphs, external data) is served as bytes."""

HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    # 'wasm-unsafe-eval' compiles onnxruntime's wasm; nothing inline runs, so data can never become script
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; "
        "connect-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class Route:
    """One servable path: a file read when asked for, or bytes held in memory."""

    content_type: str
    file: Path | None = None
    data: bytes | None = None


def content_type(name: str) -> str:
    return CONTENT_TYPES.get(Path(name).suffix, "application/octet-stream")


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 with an allowlist of paths, for the lifetime of one leg."""

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server._answer(self, body=True)

            def do_HEAD(self) -> None:
                server._answer(self, body=False)

            def log_message(self, format: str, *args: object) -> None:  # the leg's output is its record
                pass

        self._httpd = ThreadingHTTPServer((HOST, 0), Handler)
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="measure-web-leg", daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def add_file(self, path: str, file: Path) -> None:
        self._add(path, Route(content_type(file.name), file=file))

    def add_bytes(self, path: str, data: bytes, kind: str = "application/json") -> None:
        self._add(path, Route(kind, data=data))

    def remove(self, prefix: str) -> None:
        """Stop serving every path under ``prefix`` (a tier's files once its page has answered)."""
        with self._lock:
            for path in [p for p in self._routes if p.startswith(prefix)]:
                del self._routes[path]

    def _add(self, path: str, route: Route) -> None:
        if not path.startswith("/") or "?" in path or "#" in path:
            raise ValueError(f"a served path starts with / and has no query: {path!r}")
        with self._lock:
            self._routes[path] = route

    def _answer(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the page went away mid-answer
            self._respond(handler, body)

    def _respond(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        if handler.headers.get("Host") != f"{HOST}:{self.port}":  # another name for this port: refused
            self._send(handler, 403, b"forbidden host\n", "text/plain; charset=utf-8", body)
            return
        with self._lock:
            route = self._routes.get(handler.path.split("?", 1)[0])
        if route is None:
            self._send(handler, 404, b"not found\n", "text/plain; charset=utf-8", body)
            return
        if route.data is not None:
            self._send(handler, 200, route.data, route.content_type, body)
            return
        assert route.file is not None
        try:
            f = route.file.open("rb")
        except OSError:
            self._send(handler, 404, b"not found\n", "text/plain; charset=utf-8", body)
            return
        with f:
            size = route.file.stat().st_size
            self._head(handler, 200, route.content_type, size)
            if body:
                shutil.copyfileobj(f, handler.wfile, 1 << 20)

    def _send(self, handler: BaseHTTPRequestHandler, status: int, data: bytes, kind: str, body: bool) -> None:
        self._head(handler, status, kind, len(data))
        if body:
            handler.wfile.write(data)

    @staticmethod
    def _head(handler: BaseHTTPRequestHandler, status: int, kind: str, length: int) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(length))
        for name, value in HEADERS.items():
            handler.send_header(name, value)
        handler.end_headers()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
