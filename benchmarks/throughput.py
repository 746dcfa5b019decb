"""Throughput of ``mtvbench run`` against a threaded server in its own process, beside a minimal client.

    python benchmarks/throughput.py      # 1000 dialogues / 100 videos, 4 frames, latency 0.25 and 0.05 s, 16 and 64
    python benchmarks/throughput.py --concurrency 16 --server-writes two,one --reference quick-ack --repeat 3
    python benchmarks/throughput.py --src /path/to/other/checkout/src         # the same against another checkout

A synthetic dataset (``--videos`` short generated H.264 videos, ``--dialogues`` dialogues with one
scored turn each, spread over the six tasks) is written once to ``--dir``. The server (``--serve``, a child
process) is Python's ``http.server`` with a thread per connection, HTTP/1.1 keep-alive: it answers every call
after ``--latency`` seconds (the model with a short text, the judge with JSON verdicts) and logs each call's
start and end. ``--server-writes two`` writes a reply's head and body in two writes, as the stock server does
(Nagle's algorithm then holds the body until the client acknowledged the head); ``one`` in one write.

For each setting, ``mtvbench run`` (``--judge-runs 3``, a warm frame cache by default) runs in a child process,
then the minimal client (``--client``, another child: httpx and two groups of ``--concurrency`` workers, one
model request per dialogue, each answer queuing its judge requests) sends the same numbers of calls to the same
server. From the server's log: the calls' **span** (first start to last end), the span over the client's, and
per role the calls **in flight over the concurrency**, time-weighted per 4 s window of the role's steady state
(from one window after its first request to its last request: the fill and the drain left out; a phase too short
for one such window is cut into thirds, the first left out, and its window's seconds are printed with the mean
over the whole phase), the mean and the lowest window; ``CPU ms/call`` is each child's user+sys time per call,
``peak RSS`` the run's. ``--server asyncio`` serves the same calls from one asyncio event loop instead
(:class:`AsyncioServer`: less of the server's own time between a reply and the next request). The bound is
``max(N_model, N_judge) * latency / concurrency + latency``. ``--reference
quick-ack`` gives the minimal client mtvbench's transport (``models.resilience.quick_ack_transport``), ``httpx``
httpx's own; ``--client-pool per-worker`` gives each of its workers a client of its own (one connection each, as
mtvbench's ``openai:`` calls have), ``one`` one pool for all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

JUDGE_PREFIX = "Given a current model-generated answer"
STEMS = ("object_reference", "memory_recall", "summary", "answer_refusal", "topic_shifting",
         "proactive_interaction")
ABILITY = {"object_reference": "Object Reference", "memory_recall": "Memory Recall", "summary": "Summary",
           "answer_refusal": "Answer Refusal", "topic_shifting": "Topic Shifting",
           "proactive_interaction": "Proactive Interaction"}


# ---------------------------------------------------------------------------- data


def write_video(path: Path, n_frames: int, size: tuple[int, int] = (320, 240), fps: int = 15) -> None:
    import av
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.mp4")
    rng = np.random.default_rng(abs(hash(path.name)) % (1 << 32))
    with av.open(str(tmp), "w") as c:
        s = c.add_stream("libx264", rate=fps)
        s.width, s.height, s.pix_fmt = size[0], size[1], "yuv420p"
        s.options = {"preset": "veryfast"}
        base = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        for i in range(n_frames):
            img = np.roll(base, 4 * i, axis=1)
            for p in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    tmp.replace(path)


def make_dataset(root: Path, n_videos: int, n_dialogues: int, n_frames: int) -> Path:
    marker = root / f".complete-{n_videos}-{n_dialogues}-{n_frames}"
    if marker.exists():
        return root
    (root / "mtqa").mkdir(parents=True, exist_ok=True)
    (root / "checklist").mkdir(parents=True, exist_ok=True)
    for v in range(n_videos):
        p = root / "videos" / f"v{v:03d}.mp4"
        if not p.exists():
            write_video(p, n_frames)
    mtqa: dict[str, dict[str, list[Any]]] = {s: {} for s in STEMS}
    ck: dict[str, dict[str, dict[str, list[Any]]]] = {s: {} for s in STEMS}
    for d in range(n_dialogues):
        stem, video = STEMS[d % len(STEMS)], f"v{d % n_videos:03d}"
        rounds = {f"Round {k}": {"User": f"Question {k} of dialogue {d}?", "Assistant": f"Answer {k} of {d}.",
                                 "Ability": ABILITY[stem] if k == 3 else "Entity Recognition"}
                  for k in (1, 2, 3)}
        if stem in ("topic_shifting", "proactive_interaction"):  # every round is a model turn there
            rounds = {"Round 1": rounds["Round 3"] | {"User": f"Question 1 of dialogue {d}?"}}
        last = len(rounds)
        mtqa[stem].setdefault(video, []).append({"event_index": d, "mtqa": rounds})
        entry: dict[str, Any] = {"round index": last}
        for i in range(1, 6):
            entry[f"Q{i}"] = f"Does the model mention fact {i} of dialogue {d}?"
            entry[f"A{i}"] = "Yes" if i < 5 else "No"
        ck[stem].setdefault(video, {})[str(d)] = [entry]
    for s in STEMS:
        (root / "mtqa" / f"{s}.json").write_text(json.dumps(mtqa[s]))
        (root / "checklist" / f"{s}_CheckList.json").write_text(json.dumps(ck[s]))
    marker.write_text("ok")
    return root


# ---------------------------------------------------------------------------- server


def _reply(role: str) -> bytes:
    content = (json.dumps({f"A{i}": "Yes" if i < 5 else "No" for i in range(1, 6)})
               if role == "judge" else "A short answer that mentions fact 1.")
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


class AsyncioServer:
    """The same server on asyncio streams (``--server asyncio``): one event loop, no thread per connection, so
    that it adds as little as it can to the latency it simulates. Python's ``http.server`` spends a few
    milliseconds of its own per call on a busy 2-CPU machine (parsing the head with the email parser, a thread
    per connection contending for the GIL), outside the start and end it logs: at 0.05 s a call that is
    5-7% of the cycle, which no client can fill. Same log, same ``/stats`` and ``/reset``; ``two`` writes send the
    head and the body in two sends with Nagle's algorithm on, as the stock server's socket has it."""

    def __init__(self, latency: float, one_write: bool = False):
        self.latency, self.one_write = latency, one_write
        self.calls: list[tuple[str, float, float]] = []

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import socket

        if not self.one_write:
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                call = None
                if head.startswith(b"GET"):
                    data = json.dumps(self.calls).encode()
                elif head.split(b" ", 2)[1] == b"/reset":
                    self.calls, data = [], b"{}"
                else:
                    role = "judge" if JUDGE_PREFIX.encode() in body[:4096] else "model"
                    call = (role, time.perf_counter())
                    await asyncio.sleep(self.latency)
                    data = _reply(role)
                top = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)
                if self.one_write:
                    writer.write(top + data)
                else:
                    writer.write(top)
                    await writer.drain()
                    writer.write(data)
                await writer.drain()
                if call is not None:
                    self.calls.append((*call, time.perf_counter()))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def serve_forever(self) -> None:
        async def main() -> None:
            server = await asyncio.start_server(self.client, "127.0.0.1", 0, backlog=1024)
            print(server.sockets[0].getsockname()[1], flush=True)
            await server.serve_forever()

        asyncio.run(main())


# ---------------------------------------------------------------------------- the threaded server (own process)


class ThreadedServer:
    """An OpenAI-compatible ``http.server`` with a thread per connection (HTTP/1.1 keep-alive), in a
    process of its own (``--serve``): the kind of server a run meets in practice. Every call is answered
    after ``latency`` seconds; ``GET /stats`` returns each call's (role, start, end) since the last
    ``POST /reset`` (``time.perf_counter``: the system's monotonic clock, comparable across processes)."""

    def __init__(self, latency: float, one_write: bool = False):
        self.latency, self.one_write = latency, one_write
        self.lock = threading.Lock()
        self.calls: list[tuple[str, float, float]] = []

    def handler(self) -> type:
        from http.server import BaseHTTPRequestHandler

        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if srv.one_write:  # the head and the body in one write
                    self._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]
                    self.wfile.write(b"".join(self._headers_buffer) + data)  # type: ignore[attr-defined]
                    self._headers_buffer = []
                    return
                # the stock way: the head (send_response .. end_headers) and the body in two writes, which
                # meet Nagle's algorithm here and the client's delayed ACK
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with srv.lock:
                    data = json.dumps(srv.calls).encode()
                self._send(data)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/reset":
                    with srv.lock:
                        srv.calls = []
                    self._send(b"{}")
                    return
                role = "judge" if JUDGE_PREFIX.encode() in body[:4096] else "model"
                start = time.perf_counter()
                time.sleep(srv.latency)
                self._send(_reply(role))
                with srv.lock:
                    srv.calls.append((role, start, time.perf_counter()))

        return Handler


def serve(latency: float, one_write: bool, kind: str = "threaded") -> None:
    if kind == "asyncio":
        AsyncioServer(latency, one_write).serve_forever()
        return
    from http.server import ThreadingHTTPServer

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024  # the listen backlog (5 by default: 128 connections at once lose SYNs)

        def handle_error(self, request: Any, client_address: Any) -> None:
            return None  # a client that went away (the run ended) is no news

    server = Server(("127.0.0.1", 0), ThreadedServer(latency, one_write).handler())
    print(server.server_address[1], flush=True)
    server.serve_forever()


class ServerProcess:
    """:func:`serve` in a child process."""

    def __init__(self, latency: float, writes: str = "two", kind: str = "threaded"):
        self.writes = writes
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(latency), "--server-writes", writes,
                                      "--server", kind], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _call(self, method: str, path: str) -> Any:
        import httpx

        return httpx.request(method, f"http://127.0.0.1:{self.port}{path}", timeout=60).json()

    def reset(self) -> None:
        self._call("POST", "/reset")

    def calls(self) -> list[tuple[str, float, float]]:
        return [tuple(c) for c in self._call("GET", "/stats")]  # type: ignore[misc]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def slot_stats(calls: list[tuple[str, float, float]], window: float = 4.0) -> dict[str, Any]:
    """From the server's log: the calls' span (first start to last end), and per role the time-weighted
    number in flight over each ``window`` of its steady state: the windows from one window after the
    role's first request to its last request (the fill and the drain left out). A phase too short for one
    such window (from its first to its last request less than two windows: the model's 1,000 calls at 64
    in flight, or at 0.05 s) is cut into thirds instead, the first third left out as the fill; ``_whole``
    is the mean over the role's whole phase, fill and drain included (what such a phase reported before)."""
    first = min(c[1] for c in calls)
    out: dict[str, Any] = {"span_s": max(c[2] for c in calls) - first}
    for role in ("model", "judge"):
        mine = [c for c in calls if c[0] == role]
        out[f"{role}_calls"] = len(mine)
        if not mine:
            continue
        start, end, last = min(c[1] for c in mine), max(c[2] for c in mine), max(c[1] for c in mine)
        whole = sum(e - s for _, s, e in mine) / max(1e-9, end - start)
        w = window if last - start >= 2 * window else (last - start) / 3
        means = []
        t = start + w
        while w > 0 and t + w <= last + 1e-9:
            busy = sum(max(0.0, min(e, t + w) - max(s, t)) for _, s, e in mine)
            means.append(busy / w)
            t += w
        if not means:  # one request, or all at once: its whole length
            means = [whole]
        out[f"{role}_inflight"] = sum(means) / len(means)
        out[f"{role}_inflight_min"] = min(means)
        out[f"{role}_inflight_whole"] = whole
        out[f"{role}_windows"] = len(means)
        out[f"{role}_window_s"] = w
    return out


# ---------------------------------------------------------------------------- the minimal client (own process)


def minimal_client(url: str, data: Path, frames: int, cache: Path, concurrency: int, model_calls: int,
                   judge_runs: int, quick_ack: bool, per_worker: bool = False) -> None:
    """The same requests as the run with nothing but httpx: ``concurrency`` model workers send one model
    request per dialogue (the video's frames and a question, as the run's bodies), each answer queues
    ``judge_runs`` judge requests, which ``concurrency`` judge workers send. ``quick_ack``: over mtvbench's
    transport (a reply's pieces acknowledged at once), else httpx's own; ``per_worker``: a client (one connection) per
    worker, else one pool for all. Prints its seconds."""
    import base64

    import httpx

    from mtvbench.media.cache import FrameCache
    from mtvbench.media.frames import FrameSettings
    from mtvbench.models.resilience import quick_ack_transport

    fc = FrameCache(cache)
    videos = sorted((data / "videos").glob("*.mp4"))
    parts = [", ".join('{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,'
                       + base64.b64encode(j).decode() + '"}}'
                       for j in fc.get(p, FrameSettings(num_frames=frames)).jpegs) for p in videos]
    judge_body = json.dumps({"model": "judge", "max_tokens": 512, "temperature": 0.0, "messages": [
        {"role": "user", "content": JUDGE_PREFIX + " ... Checklist: Q1 ... Q5" + "x" * 1500}]}).encode()

    async def main() -> float:
        model_todo: asyncio.Queue[bytes] = asyncio.Queue()
        for k in range(model_calls):
            head = '{"model": "bench", "messages": [{"role": "user", "content": [' + parts[k % len(parts)]
            model_todo.put_nowait((head + ', {"type": "text", "text": "Question ' + str(k) + '?"}]}], '
                                   '"max_tokens": 512}').encode())
        judge_todo: asyncio.Queue[bytes | None] = asyncio.Queue()
        headers = {"Content-Type": "application/json"}

        def new_client(connections: int) -> httpx.AsyncClient:
            limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
            transport = quick_ack_transport(limits=limits) if quick_ack else httpx.AsyncHTTPTransport(limits=limits)
            return httpx.AsyncClient(base_url=url, timeout=600, transport=transport)

        shared = None if per_worker else new_client(4 * concurrency)
        clients = [shared or new_client(1) for _ in range(2 * concurrency)]
        try:
            async def model(client: httpx.AsyncClient) -> None:
                while not model_todo.empty():
                    body = model_todo.get_nowait()
                    (await client.post("/chat/completions", content=body, headers=headers)).raise_for_status()
                    for _ in range(judge_runs):
                        judge_todo.put_nowait(judge_body)

            async def judge(client: httpx.AsyncClient) -> None:
                while (body := await judge_todo.get()) is not None:
                    (await client.post("/chat/completions", content=body, headers=headers)).raise_for_status()

            t0 = time.perf_counter()
            judges = [asyncio.ensure_future(judge(c)) for c in clients[concurrency:]]
            await asyncio.gather(*(model(c) for c in clients[:concurrency]))
            for _ in judges:
                judge_todo.put_nowait(None)
            await asyncio.gather(*judges)
            return time.perf_counter() - t0
        finally:
            for c in {id(c): c for c in clients}.values():
                await c.aclose()

    print(json.dumps({"seconds": asyncio.run(main())}), flush=True)


# ---------------------------------------------------------------------------- one measurement


def prime_cache(data: Path, cache: Path, frames: int) -> None:
    """Fill the frame cache the way a first run (or another model's run) over the same videos does."""
    from mtvbench.media.cache import FrameCache
    from mtvbench.media.frames import FrameSettings

    fc = FrameCache(cache)
    for p in sorted((data / "videos").glob("*.mp4")):
        fc.get(p, FrameSettings(num_frames=frames))


def measure(srv: ServerProcess, data: Path, work: Path, frames: int, latency: float, concurrency: int,
            extra: list[str], warm: bool = False, src: Path = ROOT / "src", client: str = "quick-ack",
            client_pool: str = "one") -> dict[str, Any]:
    """``mtvbench run`` (a child process) against the server, then the minimal client (another child) with the
    same numbers of calls against the same server."""
    url = srv.url
    out = work / f"run-{frames}f"
    cache = work / f"cache-{frames}f"
    for p in (out, cache):
        subprocess.run(["rm", "-rf", str(p)], check=True)
    if warm:
        prime_cache(data, cache, frames)
    cmd = [sys.executable, "-m", "mtvbench", "run", "--data", str(data), "--model", "openai:bench",
           "--judge", "openai:judge", "--model-base-url", url, "--judge-base-url", url, "--out", str(out),
           "--frames", str(frames), "--judge-runs", "3", "--concurrency", str(concurrency),
           "--cache-dir", str(cache), "--quiet", *extra]
    env = dict(os.environ, PYTHONPATH=str(src))
    srv.reset()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"run failed ({status}):\n{err[-3000:]}")
    run = slot_stats(srv.calls())
    n_model, n_judge = run["model_calls"], run["judge_calls"]
    srv.reset()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ran = subprocess.Popen([sys.executable, __file__, "--client", url, "--dir", str(data), "--frames", str(frames),
                            "--cache-dir", str(cache), "--concurrency", str(concurrency), "--model-calls",
                            str(n_model), "--judge-runs", str(n_judge // max(1, n_model)),
                            *(["--client-quick-ack"] if client == "quick-ack" else []),
                            *(["--client-per-worker"] if client_pool == "per-worker" else [])],
                           env=dict(os.environ, PYTHONPATH=str(ROOT / "src")), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    out_text, err_text = ran.communicate()  # (it reaps the client: its CPU is in the children's usage)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if ran.returncode != 0:
        raise SystemExit(f"minimal client failed:\n{err_text[-3000:]}")
    client_s = json.loads(out_text.splitlines()[-1])["seconds"]
    ref = slot_stats(srv.calls())
    bound = max(n_model, n_judge) * latency / concurrency + latency
    return {"server_writes": srv.writes, "client": client, "client_pool": client_pool, "frames": frames,
            "cache": "warm" if warm else "cold",
            "latency": latency, "concurrency": concurrency,
            "seconds": seconds, "bound_s": bound, "model_calls": n_model, "judge_calls": n_judge,
            "span_s": run["span_s"], "client_span_s": ref["span_s"], "client_seconds": client_s,
            "span_over_client": run["span_s"] / ref["span_s"],
            **{f"{k}": run.get(k) for k in ("model_inflight", "judge_inflight", "model_inflight_min",
                                             "judge_inflight_min", "model_inflight_whole", "judge_inflight_whole",
                                             "model_window_s", "judge_window_s")},
            **{f"client_{k}": ref.get(k) for k in ("model_inflight", "judge_inflight", "model_window_s",
                                                    "judge_window_s")},
            "cpu_s_per_call": (ru.ru_utime + ru.ru_stime) / max(1, n_model + n_judge),
            "client_cpu_s_per_call": client_cpu / max(1, n_model + n_judge),
            "peak_rss_mb": ru.ru_maxrss / 1024}


def _inflight(r: dict[str, Any], role: str) -> str:
    """A role's slots busy for the table: the steady state's mean (and lowest window), with the window's length and
    the whole phase's mean when the phase was too short for 4 s windows."""
    c = r["concurrency"]
    text = f"{r[f'{role}_inflight'] / c:.3f} ({r[f'{role}_inflight_min'] / c:.2f})"
    if r.get(f"{role}_window_s") not in (None, 4.0):
        text += f" [{r[f'{role}_window_s']:.1f} s; whole {r[f'{role}_inflight_whole'] / c:.3f}]"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--model-calls", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--judge-runs", type=int, default=3, help=argparse.SUPPRESS)
    ap.add_argument("--client-quick-ack", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--client-per-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the mtvbench source tree the run uses "
                    "(another checkout's src/ for a before/after comparison)")
    ap.add_argument("--reference", default="quick-ack", choices=("quick-ack", "httpx"),
                    help="the minimal client's transport: mtvbench's (a reply's pieces acknowledged at once) or "
                    "httpx's own")
    ap.add_argument("--client-pool", default="one", choices=("one", "per-worker"),
                    help="the minimal client's connections: one pool for all its workers, or a client (one connection) "
                    "per worker, as mtvbench's openai: calls")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mtvbench-throughput"))
    ap.add_argument("--videos", type=int, default=100)
    ap.add_argument("--dialogues", type=int, default=1000)
    ap.add_argument("--video-frames", type=int, default=150, help="frames per generated video (15 fps)")
    ap.add_argument("--frames", default="4", help="comma-separated frames per call to measure")
    ap.add_argument("--latency", default="0.25,0.05", help="comma-separated seconds per call")
    ap.add_argument("--concurrency", default="16,64", help="comma-separated --concurrency values")
    ap.add_argument("--server-writes", default="two", help="comma-separated: two (the stock http.server: a reply's "
                    "head and body in two writes), one (in one write)")
    ap.add_argument("--server", default="threaded", choices=("threaded", "asyncio"),
                    help="the server: Python's http.server, a thread per connection (the kind a run meets), or one "
                    "on asyncio streams that adds as little as it can to the latency (what it logs is the client's)")
    ap.add_argument("--repeat", type=int, default=1, help="measure each setting this many times")
    ap.add_argument("--cache", default="warm", choices=("cold", "warm", "both"),
                    help="cold: frames decoded during the run; warm: the frame cache filled beforehand")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    ap.add_argument("extra", nargs="*", help="extra arguments for `mtvbench run` (after --)")
    a = ap.parse_args()
    if a.serve is not None:
        serve(a.serve, a.server_writes == "one", a.server)
        return
    if a.client:
        minimal_client(a.client, a.dir, int(a.frames), a.cache_dir, int(a.concurrency), a.model_calls, a.judge_runs,
                       a.client_quick_ack, a.client_per_worker)
        return
    data = make_dataset(a.dir / "data", a.videos, a.dialogues, a.video_frames)
    temps = ("cold", "warm") if a.cache == "both" else (a.cache,)
    rows = []
    for writes, latency in ((w, float(x)) for w in a.server_writes.split(",") for x in a.latency.split(",")):
        srv = ServerProcess(latency, writes, a.server)
        try:
            for _ in range(a.repeat):
                for c in (int(x) for x in a.concurrency.split(",")):
                    for f in a.frames.split(","):
                        for t in temps:
                            rows.append(measure(srv, data, a.dir, int(f), latency, c, a.extra, warm=t == "warm",
                                                src=a.src, client=a.reference, client_pool=a.client_pool))
                            r = rows[-1]
                            print(f"  latency {latency}s concurrency {c}: span {r['span_s']:.1f}s, client "
                                  f"{r['client_span_s']:.1f}s", file=sys.stderr, flush=True)
        finally:
            srv.close()
    load = os.getloadavg()
    print(f"{a.dialogues} dialogues, {a.videos} videos, 3 judge runs; {a.server} server in its own process; run from "
          f"{a.src}; minimal client over {a.reference}, {a.client_pool} pool; "
          f"{os.cpu_count()} CPUs, load {load[0]:.1f} {load[1]:.1f}")
    hdr = ("server writes", "latency", "conc.", "frames", "cache", "wall s", "span s", "client span s", "span / client",
           "bound s", "model in flight / conc. (min)", "judge in flight / conc. (min)", "client model / judge",
           "CPU ms/call: run / client", "peak RSS MB")
    print(" | ".join(hdr))
    for r in rows:
        c = r["concurrency"]
        print(" | ".join([r["server_writes"], f"{r['latency']:g}", str(c), str(r["frames"]), r["cache"],
                          f"{r['seconds']:.1f}",
                          f"{r['span_s']:.1f}", f"{r['client_span_s']:.1f}", f"{r['span_over_client']:.3f}",
                          f"{r['bound_s']:.1f}",
                          _inflight(r, "model"), _inflight(r, "judge"),
                          f"{r['client_model_inflight'] / c:.3f} / {r['client_judge_inflight'] / c:.3f}",
                          f"{r['cpu_s_per_call'] * 1000:.1f} / {r['client_cpu_s_per_call'] * 1000:.1f}",
                          f"{r['peak_rss_mb']:.0f}"]))
    print("span: the server's first call start to its last call end; span / client: the run's span over the minimal "
          "client's (same calls, same server, same run of this script); in flight: time-weighted calls the server "
          "served per 4 s window of the role's steady state, over the concurrency (mean, and the lowest window; "
          "[a phase too short for 4 s windows: its windows' seconds, and the mean over its whole phase]).")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
