"""A real HTTP server on 127.0.0.1 that speaks the Gemini Developer API REST protocol the
google-genai SDK uses:

- ``POST /{v}/models/{model}:generateContent`` (JSON; ``inlineData`` / ``fileData`` / ``text`` parts),
- ``POST /upload/{v}/files`` with ``X-Goog-Upload-Command: start`` -> ``X-Goog-Upload-URL`` header,
  then ``POST`` of the bytes to that URL (``upload, finalize``) -> ``X-Goog-Upload-Status: final``
  and ``{"file": ...}``,
- ``GET /{v}/files/{id}`` (``PROCESSING`` for the first ``processing_polls`` polls, then ``ACTIVE``),
- ``DELETE /{v}/files/{id}``,
- the caches API (context caching): ``POST /{v}/cachedContents`` (``model``, ``contents``,
  ``systemInstruction``, ``ttl`` "Ns", ``displayName``) -> the ``CachedContent`` (``name``
  ``cachedContents/{id}``, ``expireTime``, ``usageMetadata.totalTokenCount``; 400 INVALID_ARGUMENT when it
  holds fewer than ``min_cache_tokens``), ``GET``/``DELETE /{v}/cachedContents/{id}``; a generateContent
  with ``cachedContent`` reads the cache's contents before its own (403 PERMISSION_DENIED for a cache that
  is deleted, expired or made for another model; 400 when the request sets a system instruction too) and
  reports ``cachedContentTokenCount``; ``GET /{v}/cachedContents`` lists the live caches (``pageSize``,
  ``pageToken`` -> ``cachedContents``, ``nextPageToken``).

Faults of the caches API (each a field of :class:`GeminiState`): ``create_status`` answers every create
with that HTTP status (nothing made); ``create_delay_s`` makes the cache, then waits that long before it
answers (a client that timed out never learns its name); ``delete_status`` answers every delete with that
status (the cache stays); ``delete_hang_s`` holds every delete that long before it answers (and deletes);
``vanish_caches`` / ``vanish_after``: the first ``vanish_caches`` caches made vanish on the server after
they served ``vanish_after`` generateContent calls, the later calls naming them answered
``vanish_status`` (403 PERMISSION_DENIED or 404 NOT_FOUND, "CachedContent not found");
``generate_delay_s`` holds every generateContent that long (``delay_of(question)``: that much longer), before
it looks at the cache it names.

Token counts: 258 per image (the documented count of an image of at most 384 px) and 10 for the text.

Replies: ``"Answer to: <question> [frames=<n inline images>] [files=<n file parts>]"`` or what
``model_reply`` returns. ``block(question, attempt)`` can make a reply safety-blocked (``"prompt"``:
prompt_feedback; ``"finish"``: finish_reason SAFETY), ``"empty"`` (no candidates), ``"max_tokens"``
(a candidate without text that stopped at MAX_TOKENS) or ``"html"`` (a 200 HTML page, not JSON).
``rate_limit_every`` answers the first attempt of every k-th distinct body with 429
RESOURCE_EXHAUSTED and a RetryInfo delay.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class GeminiState:
    model_reply: Callable[[str, int, int], str] | None = None
    #: (question text, attempt of this body) -> "prompt" | "finish" | "empty" | "max_tokens" | "html" | None
    block: Callable[[str, int], str | None] | None = None
    rate_limit_every: int = 0
    #: answer every generateContent with 429 (quota exhausted for good)
    rate_limit_always: bool = False
    retry_delay: str = "0.05s"
    processing_polls: int = 1
    requests: list[dict[str, Any]] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    #: file id -> {"name", "mimeType", "sizeBytes", "data": bytes, "polls": int, "deleted": bool}
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    attempts: Counter = field(default_factory=Counter)
    api_keys: list[str] = field(default_factory=list)
    #: cache id -> {"model", "images", "order" (its parts), "system", "expires" (time.time()), "deleted", "display"}
    caches: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the smallest cache the server makes (tokens), as the API's per-model minimum
    min_cache_tokens: int = 0
    #: caches API faults (see the module doc)
    create_status: int = 0
    create_delay_s: float = 0.0
    delete_status: int = 0
    delete_hang_s: float = 0.0
    vanish_caches: int = 0
    vanish_after: int = 0
    vanish_status: int = 403
    generate_delay_s: float = 0.0
    #: question -> seconds more that its generateContent is held (a reply that comes late)
    delay_of: Callable[[str], float] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def live_caches(self) -> list[str]:
        return [k for k, c in self.caches.items() if not c["deleted"] and c["expires"] > time.time()]

    def uploads_of(self, display_name: str) -> int:
        return sum(1 for f in self.files.values() if f.get("displayName") == display_name)


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    """The API accepts both spellings of a field; the SDK sends a mix of them."""
    return d.get(camel, d.get(snake))


def _question(prompt: str) -> str:
    return prompt.rsplit("Current question: ", 1)[-1]


class _Handler(BaseHTTPRequestHandler):
    state: GeminiState
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        return

    def _send(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        try:
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its timeout, a signal)
            self.close_connection = True

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))

    def _base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _file_json(self, fid: str) -> dict[str, Any]:
        f = self.state.files[fid]
        state = "ACTIVE" if f["polls"] >= self.state.processing_polls else "PROCESSING"
        return {"name": f"files/{fid}", "displayName": f.get("displayName", ""), "mimeType": f["mimeType"],
                "sizeBytes": str(len(f["data"])), "uri": f"{self._base()}/v1beta/files/{fid}", "state": state}

    # ------------------------------------------------------------------ routes
    def do_POST(self) -> None:  # noqa: N802
        try:
            self._post()
        except Exception as e:  # a bug in the request: answer 500 with the reason instead of hanging up
            self._send(500, {"error": {"code": 500, "message": f"server error: {e!r}", "status": "INTERNAL"}})

    def _post(self) -> None:
        st = self.state
        raw = self._body()
        with st.lock:
            st.api_keys.append(self.headers.get("x-goog-api-key", ""))
        path = self.path.split("?", 1)[0]
        if re.fullmatch(r"/upload/[^/]+/files", path):
            return self._upload_start(raw)
        m = re.fullmatch(r"/upload-session/([0-9a-f]+)", path)
        if m:
            return self._upload_chunk(m.group(1), raw)
        m = re.fullmatch(r"/[^/]+/models/([^/:]+):generateContent", path)
        if m:
            return self._generate(m.group(1), raw)
        if re.fullmatch(r"/[^/]+/cachedContents", path):
            return self._create_cache(json.loads(raw))
        self._send(404, {"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}})

    def do_GET(self) -> None:  # noqa: N802
        st = self.state
        if re.fullmatch(r"/[^/]+/cachedContents", self.path.split("?", 1)[0]):
            return self._list_caches()
        m = re.fullmatch(r"/[^/]+/cachedContents/([0-9a-f]+)", self.path.split("?", 1)[0])
        if m:
            with st.lock:
                obj = self._cache_json(m.group(1)) if m.group(1) in st.live_caches() else None
            self._send(200, obj) if obj else self._send(404, _not_found("no such cached content"))
            return
        m = re.fullmatch(r"/[^/]+/files/([0-9a-f]+)", self.path.split("?", 1)[0])
        with st.lock:
            if not m or m.group(1) not in st.files or st.files[m.group(1)]["deleted"]:
                self._send(404, {"error": {"code": 404, "message": "no such file", "status": "NOT_FOUND"}})
                return
            st.counters["file_gets"] += 1
            st.files[m.group(1)]["polls"] += 1
            obj = self._file_json(m.group(1))
        self._send(200, obj)

    def do_DELETE(self) -> None:  # noqa: N802
        st = self.state
        m = re.fullmatch(r"/[^/]+/cachedContents/([0-9a-f]+)", self.path.split("?", 1)[0])
        if m:
            with st.lock:
                st.counters["cache_delete_requests"] += 1
            if st.delete_hang_s:
                time.sleep(st.delete_hang_s)
            if st.delete_status:
                self._send(st.delete_status, {"error": {"code": st.delete_status, "message": "Internal error "
                                                        "encountered.", "status": "INTERNAL"}})
                return
            with st.lock:
                found = m.group(1) in st.live_caches()
                if found:
                    st.caches[m.group(1)]["deleted"] = True
                    st.counters["cache_deletes"] += 1
            self._send(200, {}) if found else self._send(404, _not_found("no such cached content"))
            return
        m = re.fullmatch(r"/[^/]+/files/([0-9a-f]+)", self.path.split("?", 1)[0])
        with st.lock:
            if not m or m.group(1) not in st.files:
                self._send(404, {"error": {"code": 404, "message": "no such file", "status": "NOT_FOUND"}})
                return
            st.files[m.group(1)]["deleted"] = True
            st.counters["deletes"] += 1
        self._send(200, {})

    # ------------------------------------------------------------------ Files API
    def _upload_start(self, raw: bytes) -> None:
        st = self.state
        if self.headers.get("X-Goog-Upload-Protocol") != "resumable" or \
                self.headers.get("X-Goog-Upload-Command") != "start":
            self._send(400, {"error": {"code": 400, "message": "expected a resumable start", "status": "INVALID"}})
            return
        meta = (json.loads(raw or b"{}").get("file") or {})
        sid = uuid.uuid4().hex
        with st.lock:
            st.counters["upload_starts"] += 1
            st.sessions[sid] = {"meta": meta, "data": b"",
                                "size": int(self.headers.get("X-Goog-Upload-Header-Content-Length", "0")),
                                "mime": self.headers.get("X-Goog-Upload-Header-Content-Type", "")}
        self._send(200, {}, {"X-Goog-Upload-URL": f"{self._base()}/upload-session/{sid}",
                             "X-Goog-Upload-Status": "active"})

    def _upload_chunk(self, sid: str, raw: bytes) -> None:
        st = self.state
        command = self.headers.get("X-Goog-Upload-Command", "")
        offset = int(self.headers.get("X-Goog-Upload-Offset", "-1"))
        with st.lock:
            sess = st.sessions.get(sid)
            if sess is None or offset != len(sess["data"]):
                self._send(400, {"error": {"code": 400, "message": "bad session/offset", "status": "INVALID"}})
                return
            sess["data"] += raw
            if "finalize" not in command:
                self._send(200, {}, {"X-Goog-Upload-Status": "active"})
                return
            fid = uuid.uuid4().hex[:12]
            st.files[fid] = {"displayName": _get(sess["meta"], "displayName", "display_name") or "",
                             "mimeType": sess["mime"] or _get(sess["meta"], "mimeType", "mime_type") or "",
                             "data": sess["data"], "polls": 0, "deleted": False}
            st.counters["uploads"] += 1
            obj = {"file": self._file_json(fid)}
        self._send(200, obj, {"X-Goog-Upload-Status": "final"})

    # ------------------------------------------------------------------ caches API
    def _cache_json(self, cid: str) -> dict[str, Any]:
        c = self.state.caches[cid]
        expire = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(c["expires"]))
        return {"name": f"cachedContents/{cid}", "model": c["model"], "displayName": c["display"],
                "expireTime": expire, "usageMetadata": {"totalTokenCount": c["tokens"]}}

    def _list_caches(self) -> None:
        st = self.state
        query = dict(q.split("=", 1) for q in self.path.partition("?")[2].split("&") if "=" in q)
        size = max(1, min(int(query.get("pageSize", "2")), 1000))  # small pages by default: paging is used
        start = int(query.get("pageToken", "0") or 0)
        with st.lock:
            st.counters["cache_lists"] += 1
            live = sorted(st.live_caches())
            page = [self._cache_json(cid) for cid in live[start:start + size]]
        body: dict[str, Any] = {"cachedContents": page}
        if start + size < len(live):
            body["nextPageToken"] = str(start + size)
        self._send(200, body)

    def _create_cache(self, body: dict[str, Any]) -> None:
        st = self.state
        with st.lock:
            st.counters["cache_create_requests"] += 1
        if st.create_status:
            self._send(st.create_status, {"error": {"code": st.create_status, "message": "Internal error "
                                                    "encountered.", "status": "INTERNAL"}})
            return
        images = sum(1 for content in body.get("contents", []) for part in content.get("parts", [])
                     if _get(part, "inlineData", "inline_data"))
        #: the cached parts in order: "image", or the text of a text part
        order = ["image" if _get(part, "inlineData", "inline_data") else str(part.get("text"))
                 for content in body.get("contents", []) for part in content.get("parts", [])]
        system = body.get("systemInstruction")
        tokens = 258 * images + (10 if system else 0)
        ttl = re.fullmatch(r"([0-9.]+)s", str(body.get("ttl", "3600s")))
        if ttl is None or not str(body.get("model", "")).startswith("models/"):
            self._send(400, {"error": {"code": 400, "message": "bad ttl or model", "status": "INVALID_ARGUMENT"}})
            return
        if tokens < st.min_cache_tokens:
            self._send(400, {"error": {"code": 400, "message": f"Cached content is too small. total_token_count="
                                       f"{tokens}, min_total_token_count={st.min_cache_tokens}",
                                       "status": "INVALID_ARGUMENT"}})
            return
        cid = uuid.uuid4().hex[:12]
        with st.lock:
            st.caches[cid] = {"model": body["model"], "images": images, "order": order, "system": system,
                              "tokens": tokens,
                              "expires": time.time() + float(ttl.group(1)), "deleted": False,
                              "display": body.get("displayName", ""), "served": 0,
                              "vanishes": len(st.caches) < st.vanish_caches}
            st.counters["cache_creates"] += 1
            obj = self._cache_json(cid)
        if st.create_delay_s:
            time.sleep(st.create_delay_s)
        self._send(200, obj)

    # ------------------------------------------------------------------ generateContent
    def _generate(self, model: str, raw: bytes) -> None:
        st = self.state
        body = json.loads(raw)
        key = hashlib.sha1(raw).hexdigest()
        text, n_inline, file_uris = "", 0, []
        cached_images = 0
        cache_name = body.get("cachedContent")
        texts = [p["text"] for c in body.get("contents", []) for p in c.get("parts", []) if "text" in p]
        delay = st.generate_delay_s + (st.delay_of(_question(texts[-1] if texts else "")) if st.delay_of else 0.0)
        if delay:
            time.sleep(delay)
        if cache_name:
            cid = str(cache_name).rsplit("/", 1)[-1]
            with st.lock:
                cache = st.caches.get(cid) if cid in st.live_caches() else None
                if cache is not None and cache["vanishes"] and cache["served"] >= st.vanish_after:
                    cache["expires"] = 0.0  # gone on the server before its video ended
                    st.counters["vanished"] += 1
                    cache = None
                if cache is not None:
                    cache["served"] += 1
            if cache is None or cache["model"] != f"models/{model}":
                code = st.vanish_status if cache is None else 403
                status = "NOT_FOUND" if code == 404 else "PERMISSION_DENIED"
                self._send(code, {"error": {"code": code, "message": "CachedContent not found (or permission "
                                            "denied)", "status": status}})
                return
            if body.get("systemInstruction"):
                self._send(400, {"error": {"code": 400, "message": "CachedContent can not be used with "
                                           "GenerateContent request setting system_instruction",
                                           "status": "INVALID_ARGUMENT"}})
                return
            cached_images = cache["images"]
            with st.lock:
                st.counters["cached_generate"] += 1
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                if "text" in part:
                    text = part["text"]
                elif _get(part, "inlineData", "inline_data"):
                    blob = _get(part, "inlineData", "inline_data")
                    n_inline += 1
                    data = base64.urlsafe_b64decode(blob["data"] + "=" * (-len(blob["data"]) % 4))
                    if _get(blob, "mimeType", "mime_type") == "image/jpeg" and not data.startswith(b"\xff\xd8"):
                        raise ValueError("inline image is not a JPEG")
                elif _get(part, "fileData", "file_data"):
                    file_uris.append(_get(_get(part, "fileData", "file_data"), "fileUri", "file_uri"))
        with st.lock:
            st.attempts[key] += 1
            attempt = st.attempts[key]
            ordinal = len(st.attempts)
            st.counters["generate"] += 1
            st.requests.append({"model": model, "text": text, "inline": n_inline, "files": file_uris,
                                "cached_content": cache_name, "cached_images": cached_images,
                                "system": body.get("systemInstruction"), "config": body.get("generationConfig", {}),
                                "safety": body.get("safetySettings"), "attempt": attempt, "raw": raw})
            missing = [u for u in file_uris if self._file_missing(u)]
        if missing:
            self._send(400, {"error": {"code": 400, "message": f"unknown file {missing[0]}",
                                       "status": "INVALID_ARGUMENT"}})
            return
        if st.rate_limit_always or (attempt == 1 and st.rate_limit_every and ordinal % st.rate_limit_every == 0):
            with st.lock:
                st.counters["rate_limited"] += 1
            self._send(429, {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                                       "status": "RESOURCE_EXHAUSTED",
                                       "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                                    "retryDelay": st.retry_delay}]}})
            return
        images = n_inline + cached_images
        usage = {"promptTokenCount": 10 + 258 * images, "candidatesTokenCount": 7,
                 "totalTokenCount": 17 + 258 * images}
        if cached_images:
            usage["cachedContentTokenCount"] = 258 * cached_images
        block = st.block(_question(text), attempt) if st.block else None
        if block == "html":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        if block == "max_tokens":
            self._send(200, {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MAX_TOKENS",
                                             "index": 0}], "usageMetadata": usage})
            return
        if block == "prompt":
            self._send(200, {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage})
            return
        if block == "empty":
            self._send(200, {"candidates": [], "usageMetadata": usage})
            return
        if block == "finish":
            self._send(200, {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY",
                                             "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                                                                "probability": "HIGH", "blocked": True}]}],
                             "usageMetadata": usage})
            return
        if st.model_reply is not None:
            reply = st.model_reply(text, images, len(file_uris))
        else:
            reply = f"Answer to: {_question(text)} [frames={images}] [files={len(file_uris)}]"
        parts = [{"text": reply}]
        thinking = _get(body.get("generationConfig", {}), "thinkingConfig", "thinking_config") or {}
        if _get(thinking, "includeThoughts", "include_thoughts"):
            parts.insert(0, {"text": "thinking about the frames", "thought": True})
        self._send(200, {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                         "index": 0}],
                         "usageMetadata": usage, "modelVersion": model})

    def _file_missing(self, uri: str) -> bool:
        fid = uri.rstrip("/").rsplit("/", 1)[-1]
        f = self.state.files.get(fid)
        return f is None or f["deleted"]


def _not_found(message: str) -> dict[str, Any]:
    return {"error": {"code": 404, "message": message, "status": "NOT_FOUND"}}


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (its timeout, a signal) is not the server's error: nothing is printed for it."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class GeminiServer:
    def __init__(self, state: GeminiState | None = None):
        self.state = state or GeminiState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = _Server(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> GeminiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
