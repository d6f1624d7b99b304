"""A real local HTTP server for the publishing stand-ins: a thread serving 127.0.0.1 on a free
port, so the real clients (huggingface_hub, requests) talk HTTP to it. A stand-in answers
`route(request)`; failures are set per call: `fail(method, pattern, status, body)` refuses the
next matching call before it acts; `lose(method, pattern)` lets it act, then drops the
connection without an answer (a lost answer, as a real network can)."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def bearer(self) -> str:
        value = self.headers.get("authorization", "")
        return value[7:] if value.lower().startswith("bearer ") else ""


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class StandIn:
    """Base of a stand-in: its URL, the calls it got, the failures set for the next calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self._failures: list[tuple[str, re.Pattern[str], Reply | None]] = []
        self._lock = threading.Lock()
        self.url = ""

    def fail(self, method: str, pattern: str, status: int, body: Any = None) -> None:
        self._failures.append((method, re.compile(pattern), Reply(status, body)))

    def lose(self, method: str, pattern: str) -> None:
        self._failures.append((method, re.compile(pattern), None))

    def failure_for(self, method: str, path: str) -> tuple[bool, Reply | None]:
        for n, (m, pattern, reply) in enumerate(self._failures):
            if m == method and pattern.search(path):
                del self._failures[n]
                return True, reply
        return False, None

    def route(self, request: Request) -> Reply:
        raise NotImplementedError


def _body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = b""
        while True:
            size = int(handler.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                handler.rfile.readline()
                return out
            out += handler.rfile.read(size)
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def serve(standin: StandIn) -> ThreadingHTTPServer:
    """Start serving `standin`; sets its `url`. Stop with `server.shutdown()`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            return

        def _handle(self) -> None:
            parsed = urlparse(self.path)
            request = Request(
                method=self.command,
                path=parsed.path,
                query={k: v[-1] for k, v in parse_qs(parsed.query).items()},
                headers={k.lower(): v for k, v in self.headers.items()},
                body=_body(self),
            )
            with standin._lock:
                standin.calls.append((request.method, request.path))
                failing, refusal = standin.failure_for(request.method, request.path)
                reply = refusal if failing and refusal is not None else standin.route(request)
            if failing and refusal is None:  # it acted; the answer is lost
                self.close_connection = True
                self.connection.close()
                return
            data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json", **reply.headers}
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
