"""A real OpenAI-compatible HTTP server on 127.0.0.1 that plays model under test and judge.

- Model calls: replies ``"Answer to: <question> [frames=<n>]"`` (deterministic), or what
  ``model_reply`` returns.
- Judge calls (prompt starts with the Figure 17 text): replies JSON verdicts from the
  offline lexical matcher, so scores are deterministic and meaningful.
- Faults, keyed on the request body so that a retried request is recognised: 429 with
  Retry-After, 500, slow replies and malformed judge JSON, each on the *first* attempt of
  every k-th distinct body. With faults, the final results equal a fault-free run.
- Any fault of :data:`FAULTS` by name, chosen per call by ``Faults.plan`` (see
  :func:`on_first_attempt`): rate limits, 5xx, 400s with the two usual error bodies, 200 replies
  that are not answers (empty choices, null content, HTML, cut JSON, content filter, length
  with null content), a trickle of one byte every ``trickle_s``, a ``huge_bytes`` reply (with or
  without Content-Length), a hang-up, and a reply that echoes the key it was sent.
  ``die_after=N``: after N requests the server closes its port (connection refused).
- Servers that are not vLLM, as ``transformers serve`` answers: ``unexpected_fields`` (request fields
  it refuses with 422 ``{"detail": "Unexpected fields in the request: {...}"}``) and
  ``video_parts_fail`` (a ``video_url`` part gets a plain-text 500 "Internal Server Error").
- ``prefix_cache``: a provider's prefix cache. Every reply then reports
  ``usage.prompt_tokens_details.cached_tokens``: a model request's frame prefix (its system message and
  image parts) counts as cached (5 tokens per image) when an earlier request with the same prefix was
  answered before this one arrived (it counts as answered as its reply is written); requests in flight
  together do not share it. ``cached`` lists what each reply reported.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, get_args
from typing import Literal as _Literal

from mtvbench.judge.offline import judge_items

JUDGE_PREFIX = "Given a current model-generated answer"

Fault = _Literal[
    "rate_limit",  # 429 with Retry-After: Faults.retry_after (seconds)
    "rate_limit_ms",  # 429 with retry-after-ms: Faults.retry_after_ms
    "server_error",  # 500 {"error": {"message": "boom"}}
    "bad_gateway_text",  # 502 with a plain-text body
    "bad_request_detail",  # 400 {"detail": "..."} (vLLM, FastAPI)
    "bad_request_error",  # 400 {"error": {"message": "..."}} (OpenAI)
    "empty_choices",  # 200 with "choices": []
    "content_null",  # 200, message.content null, finish_reason stop
    "html",  # 200 with an HTML page (a proxy's error page)
    "cut_json",  # 200 JSON cut in the middle
    "content_filter",  # 200, content null, finish_reason content_filter
    "length_null",  # 200, content null, finish_reason length (a thinking model out of tokens)
    "trickle",  # a complete reply sent one byte every Faults.trickle_s
    "huge",  # a Faults.huge_bytes reply with Content-Length
    "huge_unsized",  # the same without Content-Length (read until the connection closes)
    "gzip_huge",  # the same gzip-compressed (a few KB on the wire), sent although identity was asked
    "hang_up",  # the connection is closed without any reply
    "echo_key",  # a normal answer that quotes the Authorization header it received
]
FAULTS: tuple[str, ...] = get_args(Fault)

BAD_REQUEST_DETAIL = "This model's maximum context length is 32768 tokens, your request has 40960"
BAD_REQUEST_ERROR = "Image inputs are not supported by this model"
BAD_GATEWAY_TEXT = "upstream connect error or disconnect/reset before headers"
HTML_PAGE = ("<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>"
             "</center><hr><center>nginx</center></body></html>")


@dataclass
class Call:
    """What a fault plan sees of a request."""

    ordinal: int  # distinct bodies seen so far, this one included
    attempt: int  # how often this very body was sent
    judge: bool
    text: str


def on_first_attempt(fault: str, every: int = 1, judge: bool = False) -> Callable[[Call], str | None]:
    """A plan: ``fault`` on the first attempt of every ``every``-th distinct model (or judge) body."""
    assert fault in FAULTS, fault

    def plan(call: Call) -> str | None:
        return fault if call.judge == judge and call.attempt == 1 and call.ordinal % every == 0 else None

    return plan


def always(fault: str, judge: bool = False) -> Callable[[Call], str | None]:
    """A plan: ``fault`` on every model (or judge) request."""
    assert fault in FAULTS, fault
    return lambda call: fault if call.judge == judge else None


@dataclass
class Faults:
    rate_limit_every: int = 0  # 429 + Retry-After on first attempt of every k-th body
    retry_after: str = "0.05"
    retry_after_ms: str = "50"
    error_every: int = 0  # 500 on first attempt
    slow_every: int = 0  # sleep slow_s before answering
    slow_s: float = 0.3
    malformed_judge_every: int = 0  # judge replies prose without JSON on first attempt
    always_malformed_judge: bool = False
    #: which fault of FAULTS (if any) answers a call
    plan: Callable[[Call], str | None] | None = None
    trickle_s: float = 1.0
    huge_bytes: int = 50 << 20
    #: after this many requests the server closes its port: every later call is refused
    die_after: int | None = None


@dataclass
class ServerState:
    faults: Faults = field(default_factory=Faults)
    model_reply: Callable[[str, int], str] | None = None
    #: the judge's reply to a judge prompt (default: the offline matcher's verdicts as fenced JSON)
    judge_reply: Callable[[str], str] | None = None
    think: bool = False
    unauthorized: bool = False  # 401 echoing the key, as some providers do
    #: request fields refused as `transformers serve` refuses the ones it does not know (422)
    unexpected_fields: frozenset[str] = frozenset()
    #: a video part is answered with a plain-text 500, as `transformers serve` does
    video_parts_fail: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    attempts: Counter = field(default_factory=Counter)
    served_ok: Counter = field(default_factory=Counter)
    faults_sent: Counter = field(default_factory=Counter)
    auth_headers: list[str] = field(default_factory=list)
    #: simulate a prefix cache and report cached tokens (see the module doc)
    prefix_cache: bool = False
    #: frame prefixes answered so far, and the cached tokens each reply reported: (judge, cached)
    prefixes: set[str] = field(default_factory=set)
    cached: list[tuple[bool, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _text_and_images(body: dict[str, Any]) -> tuple[str, int]:
    text, n_img = "", 0
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            if msg.get("role") == "user":
                text = content
            continue
        for part in content or []:
            if part.get("type") == "image_url":
                n_img += 1
            elif part.get("type") == "video_url":  # vLLM style: data:video/jpeg;base64,<jpeg>,<jpeg>,...
                url = part["video_url"]["url"]
                assert url.startswith("data:video/jpeg;base64,")
                n_img += len(url.split(",")) - 1
            elif part.get("type") == "text":
                text = part["text"]
    return text, n_img


#: the judge prompt of the paper protocol (Figure 17) and of the authors protocol (eval.py's)
_PAPER_JUDGE = re.compile(r"1\. Model Answer: (.*?)\n2\. Checklist:\n(.*?)\n\n", re.DOTALL)
_AUTHORS_JUDGE = re.compile(r"### Model Answer:\n    (.*?)\n\n    ### Checklist:\n    (.*?)\n\n    \*\*Output Format",
                            re.DOTALL)


def is_judge_prompt(text: str) -> bool:
    return text.lstrip().startswith(JUDGE_PREFIX)


def unexpected_fields_detail(fields: list[str]) -> str:
    """transformers serve's 422 detail for request fields it does not accept (a Python set's repr)."""
    return f"Unexpected fields in the request: {{{', '.join(repr(f) for f in fields)}}}"


def judge_reply(prompt: str) -> str:
    m = _PAPER_JUDGE.search(prompt) or _AUTHORS_JUDGE.search(prompt)
    assert m, "judge prompt not in the expected form"
    answer, checklist = m.group(1), m.group(2)
    qs = re.findall(r"^\s*Q(\d+): (.*)$", checklist, re.MULTILINE)
    verdicts = judge_items(answer, [q for _, q in qs])
    obj = {f"A{n}": ("Yes" if v else "No") for (n, _), v in zip(qs, verdicts)}
    return "Here is my evaluation:\n```json\n" + json.dumps(obj) + "\n```"


def frame_prefix(body: dict[str, Any]) -> str:
    """A digest of a request's system message and image parts (what a prefix cache could reuse)."""
    parts = [m for m in body.get("messages", []) if m.get("role") == "system"]
    for m in body.get("messages", []):
        if isinstance(m.get("content"), list):
            parts += [p for p in m["content"] if p.get("type") in ("image_url", "video_url")]
    return hashlib.sha1(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _question(prompt: str) -> str:
    return re.split(r"Current question:[ \n]", prompt)[-1]


@functools.lru_cache(maxsize=4)
def _huge_reply(model: str, n: int, compressed: bool = False) -> bytes:
    """A valid completion whose answer is ``n`` bytes (built once per size: the tests stay fast)."""
    data = json.dumps({"id": "chatcmpl-test", "object": "chat.completion", "model": model,
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * n},
                                    "finish_reason": "stop"}]}).encode()
    return gzip.compress(data, 1) if compressed else data


class _Handler(BaseHTTPRequestHandler):
    state: ServerState
    #: the frame prefix of the request being answered (:func:`frame_prefix`), and whether it was cached when
    #: the request arrived
    _prefix = ""
    _hit = False

    def log_message(self, *args: Any) -> None:  # quiet
        return

    def _send(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _send_raw(self, code: int, data: bytes, content_type: str = "application/json",
                  headers: dict[str, str] | None = None, length: bool = True, pause_s: float = 0.0,
                  chunk: int = 1 << 20) -> None:
        """Send ``data`` in pieces of ``chunk`` bytes, ``pause_s`` apart; stop when the client hangs up."""
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            if length:
                self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            for i in range(0, len(data), chunk):
                self.wfile.write(data[i : i + chunk])
                self.wfile.flush()
                if pause_s:
                    time.sleep(pause_s)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _completion(self, body: dict[str, Any], content: str | None, finish: str = "stop", n_img: int = 0
                    ) -> dict[str, Any]:
        usage: dict[str, Any] = {"prompt_tokens": 10 + 5 * n_img, "completion_tokens": 7,
                                 "total_tokens": 17 + 5 * n_img}
        if self.state.prefix_cache:
            with self.state.lock:
                usage["prompt_tokens_details"] = {"cached_tokens": 5 * n_img if self._hit else 0}
                if n_img:  # answered: a request that arrives from now on finds this prefix cached
                    self.state.prefixes.add(self._prefix)
                self.state.cached.append((n_img == 0, usage["prompt_tokens_details"]["cached_tokens"]))
        return {
            "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "test"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish}],
            "usage": usage,
        }

    def _fault(self, fault: str, body: dict[str, Any], answer: str, n_img: int) -> None:
        f = self.state.faults
        if fault == "rate_limit":
            self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": f.retry_after})
        elif fault == "rate_limit_ms":
            self._send(429, {"error": {"message": "rate limited"}}, {"retry-after-ms": f.retry_after_ms})
        elif fault == "server_error":
            self._send(500, {"error": {"message": "boom"}})
        elif fault == "bad_gateway_text":
            self._send_raw(502, BAD_GATEWAY_TEXT.encode(), "text/plain")
        elif fault == "bad_request_detail":
            self._send(400, {"detail": BAD_REQUEST_DETAIL})
        elif fault == "bad_request_error":
            self._send(400, {"error": {"message": BAD_REQUEST_ERROR, "type": "invalid_request_error", "code": None}})
        elif fault == "empty_choices":
            self._send(200, {**self._completion(body, None, n_img=n_img), "choices": []})
        elif fault == "content_null":
            self._send(200, self._completion(body, None, "stop", n_img))
        elif fault == "html":
            self._send_raw(200, HTML_PAGE.encode(), "text/html")
        elif fault == "cut_json":
            data = json.dumps(self._completion(body, answer, n_img=n_img)).encode()
            self._send_raw(200, data[: len(data) // 2])
        elif fault == "content_filter":
            self._send(200, self._completion(body, None, "content_filter", n_img))
        elif fault == "length_null":
            self._send(200, self._completion(body, None, "length", n_img))
        elif fault == "trickle":
            self._send_raw(200, json.dumps(self._completion(body, answer, n_img=n_img)).encode(), chunk=1,
                           pause_s=f.trickle_s)
        elif fault in ("huge", "huge_unsized"):
            self._send_raw(200, _huge_reply(body.get("model", "test"), f.huge_bytes), length=fault == "huge")
        elif fault == "gzip_huge":
            self._send_raw(200, _huge_reply(body.get("model", "test"), f.huge_bytes, compressed=True),
                           headers={"Content-Encoding": "gzip"})
        elif fault == "hang_up":
            self.close_connection = True
            self.connection.shutdown(2)
        elif fault == "echo_key":
            self._send(200, self._completion(body, f"{answer} (you sent {self.headers.get('Authorization', '')})",
                                             n_img=n_img))
        else:
            raise AssertionError(f"unknown fault {fault}")

    def _die(self) -> None:
        """Close the listening socket now (later connections are refused at once; this request is
        still answered), then stop the serving loop."""
        self.server.socket.close()
        threading.Thread(target=self.server.shutdown, daemon=True).start()

    def do_POST(self) -> None:  # noqa: N802
        st = self.state
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        body = json.loads(raw)
        key = hashlib.sha1(raw).hexdigest()
        text, n_img = _text_and_images(body)
        is_judge = is_judge_prompt(text)
        self._prefix = frame_prefix(body)
        with st.lock:
            st.attempts[key] += 1
            attempt = st.attempts[key]
            ordinal = len(st.attempts)  # distinct bodies seen so far
            st.requests.append({"key": key, "judge": is_judge, "text": text, "images": n_img,
                                "attempt": attempt, "body": body, "raw": raw, "t": time.time()})
            st.auth_headers.append(self.headers.get("Authorization", ""))
            self._hit = n_img > 0 and self._prefix in st.prefixes
            n_requests = len(st.requests)
        if st.faults.die_after is not None and n_requests == st.faults.die_after:
            self._die()
        self._answer(body, key, text, n_img, is_judge, attempt, ordinal)

    def _answer(self, body: dict[str, Any], key: str, text: str, n_img: int, is_judge: bool, attempt: int,
                ordinal: int) -> None:
        st = self.state
        if st.unauthorized:
            key_used = self.headers.get("Authorization", "").removeprefix("Bearer ")
            self._send(401, {"error": {"message": f"Incorrect API key provided: {key_used}."}})
            return
        unexpected = sorted(set(body) & st.unexpected_fields)
        if unexpected:
            self._send(422, {"detail": unexpected_fields_detail(unexpected)})
            return
        if st.video_parts_fail and '"video_url"' in json.dumps(body.get("messages")):
            self._send_raw(500, b"Internal Server Error", "text/plain")
            return
        f = st.faults
        first = attempt == 1
        if first and f.rate_limit_every and ordinal % f.rate_limit_every == 0:
            self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": f.retry_after})
            return
        if first and f.error_every and (ordinal + 1) % f.error_every == 0:
            self._send(500, {"error": {"message": "boom"}})
            return
        if first and f.slow_every and ordinal % f.slow_every == 0:
            time.sleep(f.slow_s)
        if is_judge:
            malformed = f.always_malformed_judge or (
                first and f.malformed_judge_every and ordinal % f.malformed_judge_every == 0)
            content = ("I think most of them are fine." if malformed
                       else (st.judge_reply or judge_reply)(text))
        elif st.model_reply is not None:
            content = st.model_reply(text, n_img)
        else:
            content = f"Answer to: {_question(text)} [frames={n_img}]"
            if st.think:
                content = "<think>let me look at the frames</think>" + content
        fault = f.plan(Call(ordinal, attempt, is_judge, text)) if f.plan else None
        if fault is not None:
            with st.lock:
                st.faults_sent[fault] += 1
            self._fault(fault, body, content, n_img)
            return
        with st.lock:
            st.served_ok[key] += 1
        self._send(200, self._completion(body, content, n_img=n_img))


class LoopbackServer:
    def __init__(self, state: ServerState | None = None):
        self.state = state or ServerState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
