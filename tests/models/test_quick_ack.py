"""A reply written in two pieces (head, then body: Python's http.server, many frameworks) is not held back.

The server's Nagle algorithm sends the body only once the head is acknowledged, and Linux delays the
acknowledgement of a connection that also sends by at least 40 ms (TCP_DELACK_MIN): 40 ms per call, whatever
the server's latency. mtvbench's HTTP client acknowledges what it reads at once (models/resilience.py). The
server here writes the head, then watches its own socket (TCP_INFO: segments not yet acknowledged) until the
client acknowledged it, and only then writes the body: an acknowledgement under 20 ms cannot be a delayed one.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK") or not hasattr(socket, "TCP_INFO"),
                                reason="TCP_QUICKACK and TCP_INFO are Linux's")

REPLY = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "An answer."}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


def unacked(sock: socket.socket) -> int:
    """Segments this socket sent that the peer has not acknowledged (``tcpi_unacked``)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("I", info, 24)[0]


class TwoWrites(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client's connection is one it also sends on
    acked_s: list[float] = []

    def log_message(self, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()  # the head, written on its own
        start = time.perf_counter()
        while unacked(self.connection) and time.perf_counter() - start < 0.5:
            time.sleep(0.0005)
        self.acked_s.append(time.perf_counter() - start)
        self.wfile.write(REPLY)


def ask_server(handler: type, spec: str, prompts: list[str]) -> list[str]:
    """``prompts`` asked one after another of a backend of ``spec`` against a threaded server of ``handler`` on
    127.0.0.1 (one connection, kept alive), the answers' texts."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        backend = create_backend(spec, BackendOptions(base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                                                      max_retries=0))

        async def calls() -> list[str]:
            try:
                return [(await backend.generate(GenerationRequest(id=str(i), prompt=p))).text
                        for i, p in enumerate(prompts)]
            finally:
                await backend.aclose()

        return asyncio.run(calls())
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("spec", ["openai:m"])
def test_the_head_of_a_reply_is_acknowledged_at_once(spec: str) -> None:
    handler = type("Handler", (TwoWrites,), {"acked_s": []})
    answers = ask_server(handler, spec, [f"Question {i}?" for i in range(12)])
    assert answers == ["An answer."] * 12
    # the first call's connection is new (Linux acknowledges its first segments at once anyway); of the others,
    # a delayed acknowledgement takes >= 40 ms: most must come sooner (a loaded machine may be late now and then)
    later = handler.acked_s[1:]
    prompt = [s for s in later if s < 0.02]
    assert len(prompt) >= len(later) // 2, [round(s * 1000, 1) for s in handler.acked_s]


class SetsCookies(BaseHTTPRequestHandler):
    """Sets a cookie on every reply and records the Cookie header each request came with."""

    protocol_version = "HTTP/1.1"
    seen: list[str | None] = []

    def log_message(self, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(self.headers.get("Cookie"))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Set-Cookie", f"session=s{len(self.seen)}; Path=/")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)


def test_an_api_client_sends_no_cookie_back() -> None:
    """The cookies a reply sets are not read (an API call carries its key): no request carries one."""
    handler = type("Handler", (SetsCookies,), {"seen": []})
    answers = ask_server(handler, "openai:m", ["Q?"] * 3)
    assert answers == ["An answer."] * 3 and handler.seen == [None] * 3
