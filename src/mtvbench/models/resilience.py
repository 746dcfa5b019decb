"""The call path every remote backend shares: retries, deadline, size cap, circuit breaker.

A backend only *classifies*. One attempt of a call either returns a final
:class:`~mtvbench.records.GenerationResult` (``ok``, or a final ``blocked`` / ``empty``
that is the model's own doing), or raises

- :class:`RetryableError`: 429, 408/409, 5xx, a refused or reset connection, a timeout, a
  malformed 200 reply (not JSON, no choices, no content);
- :class:`FatalError`: another attempt will not help in this run (400/401/403/404, a reply
  over the size cap). The error is stored and asked again on the next run. ``refused``: the server
  refused the request itself (a 4xx: URL, key, model name or a setting it does not accept), as
  opposed to a reply mtvbench would not take (over the size cap, unreadable).

A failure may carry a ``hint`` (what to do) that the breaker's message uses instead of the
generic one; messages say what to change with the role's own spelling
(:meth:`~mtvbench.models.settings.BackendOptions.option_advice`, ``drop_advice``).
:func:`rejected_fields` reads which request fields a 400/422 reply says the server does not accept,
:func:`model_name_refused` whether a 400/404 says the server does not serve the model name sent.

:class:`Resilient` owns everything else, once for all backends (openai, gemini, and the
judge, which calls one of them):

- backoff with full jitter (``retry_base_s``, ``retry_cap_s``), a server's ``Retry-After`` /
  ``retry-after-ms`` honoured up to ``retry_cap_s``; at most ``max_retries`` retries;
- the deadline: ``timeout_s`` bounds a whole call, connect to last byte, every attempt and
  every wait included (a server trickling one byte a second cannot hold a call open);
- the true attempt count in the result;
- the circuit breaker of the endpoint (:class:`CircuitBreaker`): ``breaker_threshold`` failed
  calls in a row open it, also after earlier successes; once open nothing new is sent
  (:class:`CircuitOpenError`, exit 3; exit 2 when no call ever succeeded and the server refused
  the request itself), calls in flight finish their current attempt. Where the calls run in other
  processes (Ray replicas), each process records what its breaker counted (:func:`breaker_events`)
  and the driver counts the same events on its one breaker (:meth:`BreakerEvent.apply`): one
  classification, one breaker, the same exit codes and hints as in one process.

:func:`capped_http_client` builds the HTTP client the SDKs are given (``http_client=`` /
``httpx_async_client=``): it enforces ``max_response_bytes`` while the body is read, so memory
stays bounded whatever the server sends (error replies included), and its connections acknowledge
each piece of a reply as soon as it is read (:class:`_QuickAckStream`): a server that writes a reply's
head and body in two writes would otherwise wait 40 ms for the acknowledgement of the head (Nagle's
algorithm on its side, Linux's delayed ACK on ours) before it sends the body, on every call.

Messages name the URL and quote the server's own words (:func:`quote_server_text`).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import random
import re
import select
import socket
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import httpcore
import httpx

from mtvbench.errors import MtvbenchError
from mtvbench.models.backend import abilities
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationResult
from mtvbench.util.secrets import redact_secrets

T = TypeVar("T")
C = TypeVar("C")

#: statuses worth another attempt (besides every 5xx)
RETRYABLE_STATUS = frozenset({408, 409, 429})
#: how much of a server's message is quoted
MAX_QUOTE_CHARS = 300


# ---------------------------------------------------------------------------------------- failures
class CallFailure(Exception):
    """How a backend classifies one failed attempt. ``message`` names the URL."""

    retryable = False
    #: the server refused the request itself (URL, key, model name, a setting it does not accept)
    refused = False

    def __init__(self, message: str, *, retry_after: float | None = None, unreachable: bool = False,
                 hint: str | None = None):
        super().__init__(message)  # quoted only by records and CircuitOpenError, which redact (records.py)
        self.message = message
        #: what to do, when the failure knows better than "check its URL, key and model name"
        self.hint = hint
        #: seconds the server asked us to wait (Retry-After), if any
        self.retry_after = retry_after
        #: no connection could be made at all (refused, DNS): counts for the breaker at once
        self.unreachable = unreachable
        #: already counted by the breaker (set by :class:`Resilient`)
        self.counted = False


class RetryableError(CallFailure):
    """A transient failure: 429, 408/409, 5xx, connection, timeout, malformed 200 reply."""

    retryable = True


class FatalError(CallFailure):
    """A failure another attempt will not fix in this run (bad request, auth, not found, too large)."""

    def __init__(self, message: str, *, refused: bool = True, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.refused = refused


class CallFailed(Exception):
    """A call that ended without a result, after ``attempts`` attempts (message is final)."""

    def __init__(self, message: str, attempts: int):
        super().__init__(message)  # becomes a GenerationResult's error, redacted there
        self.attempts = attempts


class ResponseTooLarge(Exception):
    """The reply body passed ``max_response_bytes``; reading stopped there. ``advice`` says how to
    raise the cap with the role's own spelling."""

    def __init__(self, url: str, limit: int, advice: str, size: int | None = None):
        said = f" (Content-Length {size})" if size is not None else ""
        super().__init__(f"reply from {url} is larger than max_response_bytes={limit} bytes{said}; if such replies "
                         f"are expected, raise the cap: {advice}")


class UnreadableReply(Exception):
    """A reply whose body cannot be read within the cap (an encoding we did not ask for)."""


# ---------------------------------------------------------------------------------------- messages
_TAG = re.compile(r"<[^>]+>")


def quote_server_text(body: str | bytes | None) -> str:
    """The server's own words from an error body, quoted and truncated: ``{"detail": ...}``,
    ``{"error": {"message": ...}}`` (with its ``status``), ``{"message": ...}``, or the text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    text = (body or "").strip()[:65536]  # an error body is small; a huge one is quoted from its start
    msg: str | None = None
    try:
        obj = json.loads(text) if text[:1] in "{[" and text else None
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        obj = obj[0]  # some gateways wrap the error in a list
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict):
            status, message = err.get("status"), err.get("message")
            msg = ": ".join(str(x) for x in (status, message) if x) or json.dumps(err)
        elif isinstance(err, str):
            msg = err
        if msg is None and "detail" in obj:
            detail = obj["detail"]
            msg = detail if isinstance(detail, str) else json.dumps(detail)
        if msg is None and isinstance(obj.get("message"), str):
            msg = obj["message"]
    if msg is None:
        msg = _TAG.sub(" ", text) if "<" in text else text
    msg = " ".join(msg.split())
    if len(msg) > MAX_QUOTE_CHARS:
        msg = msg[:MAX_QUOTE_CHARS] + "..."
    return f'"{msg}"' if msg else "(empty body)"


def http_error_message(status: int, url: str, body: str | bytes | None) -> str:
    return f"HTTP {status} from {url}: {quote_server_text(body)}"


#: what a server says when it refuses request fields it does not know (transformers serve's
#: "Unexpected fields in the request", pydantic's "Extra inputs are not permitted", OpenAI's
#: "Unsupported parameter", ...)
_REJECTS_FIELDS = re.compile(r"unexpected|unknown|unrecogni[sz]ed|extra (?:inputs?|fields?|param)|not permitted"
                             r"|not allowed|unsupported|not supported", re.IGNORECASE)


#: what a server says when it does not serve the model name it was sent (vLLM, OpenAI: "The model `x` does not
#: exist"; Ollama: "model 'x' not found"; a server pinned to one checkpoint: "Server is pinned to '/models/x'")
_REFUSES_MODEL = re.compile(r"pinned to|no such model|unknown model|model\b[^.\n]{0,120}?\b(?:not found|does not exist|"
                            r"not exist|not available|not served)|(?:not found|does not exist)[^.\n]{0,40}\bmodel\b",
                            re.IGNORECASE)
#: the name a pinned server says it serves (``pinned to '/models/x'``), when it is a plain model name
_PINNED_TO = re.compile(r"pinned to ['\"`]([\w./:@+-]{1,200})['\"`]", re.IGNORECASE)


def model_name_refused(body: str | bytes | None) -> str | None:
    """Whether a 400/404 reply says the server does not serve the model name it was sent: the name it
    serves when the reply names one, ``""`` when it does not, None when the reply is about something else."""
    text = (body.decode("utf-8", "replace") if isinstance(body, bytes) else body or "")[:65536]
    if not _REFUSES_MODEL.search(text):
        return None
    pinned = _PINNED_TO.search(text)
    return pinned.group(1) if pinned else ""


def rejected_fields(body: str | bytes | None, sent: Iterable[str]) -> list[str]:
    """The request fields of ``sent`` that a 400/422 reply says the server does not accept: those named
    (as whole words) in a reply that says it refuses fields, in the order of ``sent``."""
    text = (body.decode("utf-8", "replace") if isinstance(body, bytes) else body or "")[:65536]
    if not _REJECTS_FIELDS.search(text):
        return []
    return [k for k in sent if re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", text)]


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms``, or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_s(attempt: int, retry_after: float | None, base_s: float, cap_s: float) -> float:
    """The wait before attempt ``attempt + 1`` (``attempt`` >= 1 failed so far): the server's
    Retry-After up to ``cap_s``, else full jitter, uniform in [0, min(cap_s, base_s * 2**(attempt-1))]."""
    if retry_after is not None:
        return min(retry_after, cap_s)
    return random.uniform(0.0, min(cap_s, base_s * 2 ** (attempt - 1)))


# ---------------------------------------------------------------------------------------- transport
def _http_modules() -> tuple[Any, ...]:
    mods: list[Any] = [httpx]
    try:
        import httpx2  # the openai SDK's HTTP client in recent releases

        mods.append(httpx2)
    except ImportError:
        pass
    return tuple(mods)


_MODULES = _http_modules()
_CONNECT_ERRORS = tuple(m.ConnectError for m in _MODULES)
_TIMEOUTS = tuple(m.TimeoutException for m in _MODULES)
_TRANSPORT_ERRORS = tuple(m.TransportError for m in _MODULES) + tuple(m.StreamError for m in _MODULES)


def causes(e: BaseException) -> Iterator[BaseException]:
    """``e`` and what it was raised from (SDKs wrap transport errors)."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def transport_failure(e: BaseException, url: str) -> CallFailure | None:
    """Classify a transport-level exception (httpx / httpx2 / OS), looking through wrappers."""
    for err in causes(e):
        if isinstance(err, (ResponseTooLarge, UnreadableReply)):
            return FatalError(str(err), refused=False)  # the server answered; mtvbench would not take the reply
    for err in causes(e):
        detail = str(err) or type(err).__name__
        if isinstance(err, (*_CONNECT_ERRORS, ConnectionRefusedError)):
            return RetryableError(f"cannot connect to {url}: {detail}", unreachable=True)
        if isinstance(err, _TIMEOUTS):
            return RetryableError(f"timed out talking to {url}: {type(err).__name__}")
        if isinstance(err, (*_TRANSPORT_ERRORS, OSError)):
            return RetryableError(f"connection to {url} failed: {type(err).__name__}: {detail}")
    return None


@functools.cache
def _capped_stream_class(base: type) -> type:
    """A byte stream (subclass of the client's own ``AsyncByteStream``) that stops at the cap."""

    class CappedStream(base):  # type: ignore[misc, valid-type]
        def __init__(self, inner: Any, limit: int, url: str, decoder: Any | None, advice: str):
            self._inner, self._limit, self._url, self._decoder, self._advice = inner, limit, url, decoder, advice

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            try:
                async for chunk in self._inner:
                    if self._decoder is not None:  # gzip/deflate sent although identity was asked for
                        chunk = self._decoder.decompress(chunk, self._limit - seen + 1)
                    seen += len(chunk)
                    if seen > self._limit:
                        raise ResponseTooLarge(self._url, self._limit, self._advice)
                    yield chunk
                tail = self._decoder.flush() if self._decoder is not None else b""
            except zlib.error as e:
                raise UnreadableReply(f"reply from {self._url} cannot be decompressed: {e}") from None
            if seen + len(tail) > self._limit:
                raise ResponseTooLarge(self._url, self._limit, self._advice)
            if tail:
                yield tail

        async def aclose(self) -> None:
            await self._inner.aclose()

    return CappedStream


def _stream_base(stream: Any) -> type:
    for cls in type(stream).__mro__:
        if cls.__name__ == "AsyncByteStream":
            return cls
    raise TypeError(f"not an async byte stream: {type(stream).__name__}")


async def _identity(request: Any) -> None:
    request.headers["Accept-Encoding"] = "identity"  # then the cap counts exactly what is kept


def _cap_hook(limit: int, advice: str) -> Callable[[Any], Awaitable[None]]:
    async def cap(response: Any) -> None:
        url = str(response.request.url)
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise ResponseTooLarge(url, limit, advice, int(length))
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        decoder = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
            del response.headers["content-encoding"]
            if "content-length" in response.headers:
                del response.headers["content-length"]
        elif encoding not in ("identity", ""):
            raise UnreadableReply(f"reply from {url} uses Content-Encoding {encoding!r} (identity was asked for); "
                                  "its size cannot be bounded")
        response.stream = _capped_stream_class(_stream_base(response.stream))(response.stream, limit, url, decoder,
                                                                              advice)

    return cap


#: Linux's socket option that sends the ACK of what was received at once (elsewhere: None, nothing to do)
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


class _QuickAckStream(httpcore.AsyncNetworkStream):
    """A connection that acknowledges every piece of a reply as soon as it is read.

    A server that writes a reply's head and body in two writes (Python's ``http.server``, many
    frameworks) holds the body back under Nagle's algorithm until the head is acknowledged, and
    Linux delays that acknowledgement by 40 ms on a connection that also sends: 40 ms between a
    reply's head and its body, per call, whatever the server's latency (a slot idle for that long,
    most of a fast local server's call). ``TCP_QUICKACK`` after each write and each read sends the ACK at
    once."""

    def __init__(self, inner: httpcore.AsyncNetworkStream):
        self._inner = inner
        #: a socket.socket, or asyncio's TransportSocket view of one (None: not a socket)
        self._raw = inner.get_extra_info("socket")
        self._sock = self._raw if _QUICKACK is not None and hasattr(self._raw, "setsockopt") else None

    def _ack(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):  # a closed socket, an AF_UNIX one: nothing to acknowledge
                self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        self._ack()
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)
        # sending right after a reply puts the connection back into delayed-ACK mode: out of it again, so the
        # kernel acknowledges the next reply's head on arrival, before this process is even scheduled to read it
        self._ack()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _QuickAckStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        # the connection pool asks every idle connection whether the server closed it, for every request:
        # answered from the socket kept here (the stream's own answer builds its attribute table each time)
        if info == "socket" and self._raw is not None:
            return self._raw
        if info == "is_readable" and self._raw is not None:
            return _readable(self._raw)
        return self._inner.get_extra_info(info)


def _readable(sock: Any) -> bool:
    """The socket has something to read (data, or the server's end of the connection) or is gone."""
    try:
        fd = sock.fileno()
        if fd < 0:
            return True
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


class _QuickAckBackend(httpcore.AsyncNetworkBackend):
    """httpx's network backend, its connections :class:`_QuickAckStream`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend):
        self._inner = inner

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _QuickAckStream(await self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return await self._inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def quick_ack_transport(**kwargs: Any) -> httpx.AsyncHTTPTransport:
    """httpx's transport (``kwargs``: its own, e.g. ``limits``) whose connections acknowledge a reply's
    pieces at once (:class:`_QuickAckStream`). httpx takes no network backend, so it goes into the
    connection pool the transport made (``_pool._network_backend``, httpx 0.27-0.28, httpcore 1.x)."""
    transport = httpx.AsyncHTTPTransport(**kwargs)
    pool = transport._pool
    pool._network_backend = _QuickAckBackend(pool._network_backend)  # type: ignore[union-attr]
    return transport


class _NoCookies(httpx.Cookies):
    """A cookie jar that keeps nothing a reply sets."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class ApiClient(httpx.AsyncClient):
    """httpx's client for API calls, which carry their key and no cookies: the cookies a reply sets are not read.
    httpx reads them from every reply through :mod:`urllib.request`'s and :mod:`email`'s objects, which cost
    about a tenth of the client's CPU per call, on the path from a reply to the slot's next request."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise TypeError("an API client keeps no cookies")


_NO_COOKIES = _NoCookies()


def capped_http_client(client_cls: Callable[..., C], options: BackendOptions, **kwargs: Any) -> C:
    """An async HTTP client (``httpx.AsyncClient``, ``openai.DefaultAsyncHttpxClient``, ...) whose
    every reply body is cut off past ``options.max_response_bytes`` while it is read, and whose
    connections acknowledge a reply's pieces at once (:class:`_QuickAckStream`; ``limits`` and ``verify`` go to
    its transport)."""
    advice = options.option_advice("max_response_bytes")
    hooks = {"request": [_identity], "response": [_cap_hook(options.max_response_bytes, advice)]}
    if "transport" not in kwargs:
        limits = kwargs.pop("limits", httpx.Limits(max_connections=100, max_keepalive_connections=20))
        kwargs["transport"] = quick_ack_transport(limits=limits, verify=kwargs.pop("verify", True))
    return client_cls(timeout=options.timeout_s, event_hooks=hooks, **kwargs)


# ---------------------------------------------------------------------------------------- breaker
class CircuitOpenError(MtvbenchError):
    """An endpoint failed too many calls in a row; the run stops sending to it (exit 3, or 2 when
    no call to it ever succeeded and it refused the request itself: a key, URL or model problem)."""

    exit_code = 3

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int = 3):
        super().__init__(redact_secrets(message) or "", hint=hint)
        self.exit_code = exit_code


@dataclass(frozen=True)
class BreakerEvent:
    """One count of a breaker: a call that ended with a reply, or a failure with what the breaker's
    message and exit code need."""

    failed: bool
    message: str | None = None
    refused: bool = False
    hint: str | None = None

    def apply(self, breaker: CircuitBreaker) -> None:
        """Count this event on ``breaker`` (the driver's, for a call made in a Ray replica)."""
        if self.failed:
            breaker.failure(self.message, self.refused, self.hint)
        else:
            breaker.success()


_EVENTS: ContextVar[list[BreakerEvent] | None] = ContextVar("mtvbench_breaker_events", default=None)


@contextlib.contextmanager
def breaker_events() -> Iterator[list[BreakerEvent]]:
    """Every count a breaker makes in this context (this call's task), in order."""
    events: list[BreakerEvent] = []
    token = _EVENTS.set(events)
    try:
        yield events
    finally:
        _EVENTS.reset(token)


def _noted(event: BreakerEvent) -> None:
    events = _EVENTS.get()
    if events is not None:
        events.append(event)


class CircuitBreaker:
    """Counts failures in a row at one endpoint; at ``threshold`` it opens for good (this run).

    A failure is a call that ended in error (after its retries), or one connection attempt that
    was refused (nothing listens there: counted at once, so a dead server stops a run in a
    moment, not after every call's retries). Any reply that ends a call (ok, blocked, empty)
    resets the count."""

    def __init__(self, name: str, url: str | None, threshold: int):
        self.name = name
        self.url = url
        self.threshold = threshold
        self.failures_in_row = 0
        self.successes = 0
        self.last_error: str | None = None
        self._last_refused = False
        self._last_hint: str | None = None
        self.is_open = False

    def success(self) -> None:
        _noted(BreakerEvent(False))
        self.successes += 1
        if not self.is_open:
            self.failures_in_row = 0

    def failure(self, message: str | None, refused: bool = False, hint: str | None = None) -> None:
        """Count a failed call (or refused connection); ``refused``: the server refused the request itself."""
        _noted(BreakerEvent(True, message, refused, hint))
        self.failures_in_row += 1
        self.last_error = message
        self._last_refused = refused
        self._last_hint = hint
        if self.failures_in_row >= self.threshold:
            self.is_open = True

    def check(self) -> None:
        """Raise :class:`CircuitOpenError` when open (before anything is sent)."""
        if self.is_open:
            raise self.error()

    def error(self) -> CircuitOpenError:
        where = f"{self.name} at {self.url}" if self.url else self.name
        never = self.successes == 0 and self._last_refused
        todo = self._last_hint or ("check its URL, key and model name" if never else None)
        return CircuitOpenError(
            f"{where}: {self.failures_in_row} failures in a row (failed calls or refused connections); nothing more "
            f"is sent to it in this run (circuit breaker, breaker_threshold={self.threshold}). "
            f"Last error: {self.last_error}",
            hint=f"no call to it succeeded: {todo}" if never else (f"{todo}; " if todo else "")
            + "everything finished is stored; run the same command again to ask only what is missing",
            exit_code=2 if never else 3)


def breaker_of(backend: Any) -> CircuitBreaker | None:
    """The breaker of a backend that calls a server (None for local backends)."""
    breaker = abilities(backend).breaker
    return breaker if isinstance(breaker, CircuitBreaker) else None


# ---------------------------------------------------------------------------------------- wrapper
Classifier = Callable[[BaseException], CallFailure | None]
#: ``asyncio.timeout`` (Python 3.11+): a deadline over an await in the task itself
_TIMEOUT = getattr(asyncio, "timeout", None)


class Resilient:
    """The retry/deadline/breaker wrapper of one backend talking to one endpoint.

    ``classify`` maps a backend's own exceptions (SDK errors) to :class:`RetryableError` /
    :class:`FatalError` (None: not its kind); transport errors are classified here.
    Anything still unclassified is a bug and propagates.
    """

    def __init__(self, name: str, url: str, options: BackendOptions, classify: Classifier | None = None):
        self.name = name
        self.url = url
        self.options = options
        self.classify = classify or (lambda e: None)
        self.breaker = CircuitBreaker(name, url, options.breaker_threshold)

    def _classified(self, e: BaseException) -> CallFailure | None:
        if isinstance(e, CallFailure):
            return e
        return self.classify(e) or transport_failure(e, self.url)

    async def _attempt(self, fn: Callable[[], Awaitable[T]], deadline: float, timeout: float) -> T:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise asyncio.TimeoutError
            if _TIMEOUT is None:  # Python 3.10: the attempt runs in a task of its own
                return await asyncio.wait_for(fn(), remaining)
            async with _TIMEOUT(remaining):  # in the caller's task: no task made, no loop step more, per attempt
                return await fn()
        except asyncio.TimeoutError:
            raise RetryableError(f"no complete reply from {self.url} within timeout_s={timeout:g}s") from None
        except Exception as e:
            failure = self._classified(e)
            if failure is None:
                raise  # not a failure of the call: a bug
            if failure.unreachable:
                self.breaker.failure(failure.message)
                failure.counted = True
            if failure is e:
                raise
            raise failure from e

    async def call(self, fn: Callable[[], Awaitable[T]], timeout_s: float | None = None) -> tuple[T, int]:
        """Run ``fn`` (one attempt) until it succeeds; return (result, attempts). Raises
        :class:`CallFailed` when the call ends without a result, :class:`CircuitOpenError`
        (nothing sent) when the endpoint's breaker is open."""
        self.breaker.check()
        timeout = timeout_s if timeout_s is not None else self.options.timeout_s
        start = time.monotonic()
        deadline = start + timeout
        attempts = 0
        # a plain loop, not a retry library: its machinery (a state object, an inspection of each callable) cost
        # more CPU per call than the rest of this wrapper, on the path from a reply to the slot's next request
        while True:
            attempts += 1
            try:
                value = await self._attempt(fn, deadline, timeout)
                break
            except CallFailure as e:
                wait = backoff_s(attempts, e.retry_after, self.options.retry_base_s, self.options.retry_cap_s)
                if (not e.retryable or attempts > self.options.max_retries or self.breaker.is_open
                        or time.monotonic() - start + wait >= timeout):  # no time for the wait and another attempt
                    if not e.counted:
                        self.breaker.failure(e.message, refused=e.refused, hint=e.hint)
                    raise CallFailed(self._final_message(e, attempts, time.monotonic() - start, timeout),
                                     attempts) from e
            await asyncio.sleep(wait)
        self.breaker.success()
        return value, attempts

    def _final_message(self, e: CallFailure, attempts: int, elapsed: float, timeout: float) -> str:
        if not e.retryable:
            return e.message
        if self.breaker.is_open:
            why = "circuit breaker open"
        elif attempts > self.options.max_retries:
            why = f"max_retries={self.options.max_retries} spent"
        else:
            why = f"no time left for another attempt within timeout_s={timeout:g}s"
        return f"{e.message} (gave up after {attempts} attempt{'s' * (attempts != 1)} in {elapsed:.1f}s: {why})"

    async def generate(self, fn: Callable[[], Awaitable[GenerationResult]]) -> GenerationResult:
        """:meth:`call` for one generation: failures become an ``error`` result with the true
        attempt count; only :class:`CircuitOpenError` (nothing was sent) is raised."""
        start = time.perf_counter()
        try:
            res, attempts = await self.call(fn)
        except CallFailed as e:
            return GenerationResult(outcome="error", error=str(e), attempts=e.attempts,
                                    latency_s=time.perf_counter() - start)
        return res.model_copy(update={"attempts": attempts, "latency_s": time.perf_counter() - start})
