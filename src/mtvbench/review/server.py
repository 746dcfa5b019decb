"""Running the review app: loopback by default; any other address only with per-user tokens."""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Callable

from mtvbench.errors import ConfigError, require
from mtvbench.review.source import ReviewSource
from mtvbench.review.store import ReviewStore


def is_loopback(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 or ::1."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def url_of(host: str, port: int) -> str:
    """The URL of the app on ``host`` and ``port`` (an IPv6 address in brackets)."""
    h = host.strip("[]")
    return f"http://[{h}]:{port}" if ":" in h else f"http://{h}:{port}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port), or one clear error."""
    h = host.strip("[]")
    if h.lower() == "localhost":
        h = "127.0.0.1"
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(h).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((h, port))
    except OSError as e:
        sock.close()
        hint = "choose another --port" if e.errno == errno.EADDRINUSE else None
        raise ConfigError(f"cannot listen on {url_of(host, port)}: {e.strerror or e}", hint=hint) from None
    sock.listen(128)
    return sock


def serve(source: ReviewSource, store: ReviewStore, host: str = "127.0.0.1", port: int = 8765,
          on_ready: Callable[[str], None] | None = None, guidelines: str | None = None) -> None:
    """Serve the app until Ctrl-C. A non-loopback ``host`` needs registered users (tokens).
    ``guidelines``: Markdown replacing the built-in guidelines."""
    require("starlette", "review", "the review web app")
    uvicorn = require("uvicorn", "review", "the review web app")
    from mtvbench.review.app import LOOPBACK_NAMES, create_app

    loopback = is_loopback(host)
    if not loopback and not store.has_users():
        raise ConfigError(f"refusing to serve on {host} without access tokens: anyone who can reach it could "
                          "act as any annotator",
                          hint=f"add users first (mtvbench review add-user {source.root} NAME --job annotator), "
                               "or serve on 127.0.0.1")
    trusted = (LOOPBACK_NAMES | {host.strip("[]").lower()}) if loopback else None
    app = create_app(source, store, require_tokens=not loopback, trusted_hosts=trusted, guidelines=guidelines)
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=3)
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url_of(host, actual) + "/")
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # Ctrl-C is how the server is meant to stop; every decision is already stored
    finally:
        sock.close()
