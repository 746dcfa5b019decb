"""A real OpenAI-compatible HTTP server on 127.0.0.1 that plays model under test and judge.

- Model calls: replies ``"Answer to: <question> [frames=<n>]"`` (deterministic), or what
  ``model_reply`` returns.
- Judge calls (prompt starts with the Figure 17 text): replies JSON verdicts from the
  offline lexical matcher, so scores are deterministic and meaningful.
- Faults, keyed on the request body so that a retried request is recognised: 429 with
  Retry-After, 500, slow replies and malformed judge JSON, each on the *first* attempt of
  every k-th distinct body. With faults, the final results equal a fault-free run.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mtvbench.judge.offline import judge_items

JUDGE_PREFIX = "Given a current model-generated answer"


@dataclass
class Faults:
    rate_limit_every: int = 0  # 429 + Retry-After on first attempt of every k-th body
    retry_after: str = "0.05"
    error_every: int = 0  # 500 on first attempt
    slow_every: int = 0  # sleep slow_s before answering
    slow_s: float = 0.3
    malformed_judge_every: int = 0  # judge replies prose without JSON on first attempt
    always_malformed_judge: bool = False


@dataclass
class ServerState:
    faults: Faults = field(default_factory=Faults)
    model_reply: Callable[[str, int], str] | None = None
    think: bool = False
    unauthorized: bool = False  # 401 echoing the key, as some providers do
    requests: list[dict[str, Any]] = field(default_factory=list)
    attempts: Counter = field(default_factory=Counter)
    served_ok: Counter = field(default_factory=Counter)
    auth_headers: list[str] = field(default_factory=list)
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


def judge_reply(prompt: str) -> str:
    m = re.search(r"1\. Model Answer: (.*?)\n2\. Checklist:\n(.*?)\n\n", prompt, re.DOTALL)
    assert m, "judge prompt not in the expected form"
    answer, checklist = m.group(1), m.group(2)
    qs = re.findall(r"^Q(\d+): (.*)$", checklist, re.MULTILINE)
    verdicts = judge_items(answer, [q for _, q in qs])
    obj = {f"A{n}": ("Yes" if v else "No") for (n, _), v in zip(qs, verdicts)}
    return "Here is my evaluation:\n```json\n" + json.dumps(obj) + "\n```"


def _question(prompt: str) -> str:
    return prompt.rsplit("Current question: ", 1)[-1]


class _Handler(BaseHTTPRequestHandler):
    state: ServerState

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

    def do_POST(self) -> None:  # noqa: N802
        st = self.state
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        body = json.loads(raw)
        key = hashlib.sha1(raw).hexdigest()
        text, n_img = _text_and_images(body)
        is_judge = text.startswith(JUDGE_PREFIX)
        with st.lock:
            st.attempts[key] += 1
            attempt = st.attempts[key]
            ordinal = len(st.attempts)  # distinct bodies seen so far
            st.requests.append({"key": key, "judge": is_judge, "text": text, "images": n_img,
                                "attempt": attempt, "body": body, "t": time.time()})
            st.auth_headers.append(self.headers.get("Authorization", ""))
        if st.unauthorized:
            key_used = self.headers.get("Authorization", "").removeprefix("Bearer ")
            self._send(401, {"error": {"message": f"Incorrect API key provided: {key_used}."}})
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
            content = "I think most of them are fine." if malformed else judge_reply(text)
        elif st.model_reply is not None:
            content = st.model_reply(text, n_img)
        else:
            content = f"Answer to: {_question(text)} [frames={n_img}]"
            if st.think:
                content = "<think>let me look at the frames</think>" + content
        with st.lock:
            st.served_ok[key] += 1
        self._send(200, {
            "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "test"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10 + 5 * n_img, "completion_tokens": 7, "total_tokens": 17 + 5 * n_img},
        })


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
