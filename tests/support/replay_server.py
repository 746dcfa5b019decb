"""A scripted OpenAI-compatible judge on 127.0.0.1 that replays recorded replies.

Rule: ``POST /v1/chat/completions`` is answered by the pair (sha256 of the request's prompt text, n), where
n counts how often that prompt text has been received so far, this request included (1-based; every HTTP
request counts, also one answered with a failure, so a client's own retries use up numbers). The prompt text
is the text of the request's last user message (a string content, or its text parts joined without a
separator). Lookup order: the prompt's entry for n, else the prompt's ``"*"`` entry, else the script's default
reply. An entry is a reply text (HTTP 200 with that content), ``{"content": null}`` (HTTP 200 whose
``message.content`` is null, finish_reason ``stop``) or ``{"status": 500}`` (a transport failure, HTTP 500 with
an OpenAI error body). eval.py sends one prompt for all three judge runs of a turn, so n decides
the run (and the attempt within it).

Every request is recorded in arrival order (``seq``, digest, n, status, reply, the parsed body), so a test
can compare the exact messages sent. The script is plain JSON (see :meth:`ReplayScript.to_json`), the form
stored as ``tests/fixtures/authors/*/judge_script.json``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from tests.support.openai_server import LoopbackServer, ServerState, _Handler

#: the scripted value of one (prompt, n): a reply text, a null content (``{"content": None}``), or an HTTP status
Entry = str | dict[str, int | None]


def prompt_digest(text: str) -> str:
    """sha256 (hex) of a prompt text's UTF-8 bytes: the key of a script entry."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a chat-completions body ("" when there is none)."""
    users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


@dataclass
class PromptScript:
    """The entries of one prompt: by n (``"1"``, ``"2"``, ...) and ``"*"`` for every other n."""

    replies: dict[str, Entry] = field(default_factory=dict)
    label: str = ""  # what the prompt is (e.g. the turn it judges): for people, ignored by the server

    def entry(self, n: int) -> Entry | None:
        return self.replies.get(str(n), self.replies.get("*"))


@dataclass
class ReplayScript:
    default: str = "{}"
    prompts: dict[str, PromptScript] = field(default_factory=dict)

    def entry(self, digest: str, n: int) -> Entry:
        scripted = self.prompts[digest].entry(n) if digest in self.prompts else None
        return self.default if scripted is None else scripted

    def add(self, text: str, replies: dict[str, Entry], label: str = "") -> str:
        """Script the replies of prompt ``text``; return its digest."""
        key = prompt_digest(text)
        self.prompts[key] = PromptScript(dict(replies), label)
        return key

    def to_json(self) -> dict[str, Any]:
        return {"default": self.default,
                "prompts": {k: {"label": p.label, "replies": p.replies} for k, p in self.prompts.items()}}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ReplayScript:
        prompts = {k: PromptScript(dict(v["replies"]), v.get("label", "")) for k, v in obj["prompts"].items()}
        return cls(obj["default"], prompts)


@dataclass(frozen=True)
class Recorded:
    """One request as received, with what it was answered."""

    seq: int  # arrival order, 1-based
    digest: str
    n: int  # how often this prompt had been received, this request included
    status: int
    reply: str | None  # the content sent back (None with a failure status)
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        return prompt_text(self.body)


class _ReplayHandler(_Handler):
    replay: ReplayServer

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        body = json.loads(raw)
        entry, rec = self.replay.record(body)
        if rec.status != 200:
            self._send(rec.status, {"error": {"message": f"scripted failure for n={rec.n}", "type": "server_error"}})
            return
        self._send(200, self._completion(body, entry if isinstance(entry, str) else None))


class ReplayServer(LoopbackServer):
    """``with ReplayServer(script) as srv:`` serves on ``srv.url``; ``srv.requests`` lists what came in."""

    def __init__(self, script: ReplayScript) -> None:
        self.script = script
        self.requests: list[Recorded] = []
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.state = ServerState()  # the loopback server's defaults (no prefix cache) for the shared reply code
        handler = type("Handler", (_ReplayHandler,), {"replay": self, "state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def record(self, body: dict[str, Any]) -> tuple[Entry, Recorded]:
        key = prompt_digest(prompt_text(body))
        with self._lock:
            self._seen[key] += 1
            n = self._seen[key]
            entry = self.script.entry(key, n)
            status = 200 if isinstance(entry, str) or "content" in entry else int(entry["status"])  # type: ignore[arg-type]
            rec = Recorded(len(self.requests) + 1, key, n, status, entry if isinstance(entry, str) else None, body)
            self.requests.append(rec)
        return entry, rec

    def calls(self, digest: str) -> list[Recorded]:
        """The requests of one prompt, in arrival order."""
        return [r for r in self.requests if r.digest == digest]
