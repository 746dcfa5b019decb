"""How much of the frame prefill a provider's prefix cache saves under mtvbench's request order.

    python benchmarks/prefix_cache.py                      # 1000 dialogues / 135 videos, 4 and 128 frames, both orders
    python benchmarks/prefix_cache.py --frames 4 --orders today,cache-aware

A server **in its own process** (an OpenAI-compatible asyncio HTTP/1.1 server: ``python
benchmarks/prefix_cache.py --serve``) simulates a provider's prefix cache: a model request's frame prefix
(everything in the body before its text part: model name, system prompt, image parts) is served from the
cache when an earlier request with the same prefix was **answered** within ``--ttl`` seconds before this
one arrived (requests in flight together do not share it); it answers after ``--latency`` seconds plus
``--prefill-s`` per uncached prompt token and reports ``usage.prompt_tokens_details.cached_tokens``
(``--frame-tokens`` per image, about 4 characters per text token). Judge requests (no image) get JSON verdicts.

The data is benchmark-shaped and synthetic (benchmarks/throughput.py's generator: ``--dialogues`` dialogues
with one judged turn each over ``--videos`` short videos), the context golden. For each frame count and
order, ``mtvbench run`` (a child process, ``--judge-runs 3``, ``--concurrency 16``, frame cache filled
beforehand) reports:

- **cached / ideal**: frame-prefix tokens served from the cache over the most a cache can serve (each
  video's prefix computed once: every model request of a video but its first);
- **wall s** of the run, and its **cost** from scores.json (``--price-input``/``--price-cached``/
  ``--price-output`` per million tokens; the cached tokens at the cached price);
- **estimate**: ``mtvbench estimate``'s own wall time (a child process) over the same data and settings,
  and the cached tokens it predicts for the order;
- **minimal client**: an asyncio client that sends the same numbers of model and judge requests (the same
  frames, 16 in flight per role, a video's requests together, each answer's 3 judge requests when it
  arrives) to the same server; **throughput ratio** = its wall time / mtvbench's.

``--orders``: ``today`` (every turn of a video sent at once: ``mtvbench run --cache-order off``) and
``cache-aware`` (``--cache-order on``, the default for ``openai:``: a video's first turn alone, the others once
it was answered).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import _reply, make_dataset, prime_cache  # noqa: E402

TEXT_PART = b'{"type": "text"'


# ---------------------------------------------------------------------------- the server (its own process)
class CacheServer:
    """The prefix-cache simulation (module doc); its statistics at ``GET /stats``, reset by ``POST /reset``."""

    def __init__(self, latency: float, prefill_s: float, frame_tokens: int, ttl: float):
        self.latency, self.prefill_s, self.frame_tokens, self.ttl = latency, prefill_s, frame_tokens, ttl
        self.reset()

    def reset(self) -> None:
        self.answered: dict[bytes, float] = {}
        self.stats: dict[str, Any] = {"model": 0, "judge": 0, "prefix_tokens": 0, "cached_tokens": 0,
                                      "first_s": None, "last_s": 0.0, "busy": {"model": 0.0, "judge": 0.0}}
        self.inflight = {"model": 0, "judge": 0}
        self.mark = time.perf_counter()

    def _tick(self) -> None:
        now = time.perf_counter()
        for k, n in self.inflight.items():
            self.stats["busy"][k] += n * (now - self.mark)
        self.mark = now

    async def answer(self, body: bytes) -> bytes:
        cut = body.rfind(TEXT_PART)
        role = "model" if b'"image_url"' in body[: max(cut, 0)] else "judge"
        prefix = body[:cut] if role == "model" else b""
        images = prefix.count(b'"type": "image_url"')  # (each part also names its "image_url" field)
        prefix_tokens = images * self.frame_tokens
        text_tokens = (len(body) - len(prefix)) // 4 if role == "model" else len(body) // 4
        now = time.perf_counter()
        key = hashlib.blake2b(prefix, digest_size=16).digest() if role == "model" else b""
        hit = role == "model" and now - self.answered.get(key, -1e18) <= self.ttl
        cached = prefix_tokens if hit else 0
        st = self.stats
        self._tick()
        st[role] += 1
        st["prefix_tokens"] += prefix_tokens
        st["cached_tokens"] += cached
        st["first_s"] = now if st["first_s"] is None else st["first_s"]
        self.inflight[role] += 1
        try:
            await asyncio.sleep(self.latency + self.prefill_s * (prefix_tokens + text_tokens - cached))
        finally:
            self._tick()
            self.inflight[role] -= 1
        done = time.perf_counter()
        st["last_s"] = done
        if role == "model":
            self.answered[key] = done
        reply = json.loads(_reply(role))
        reply["usage"] = {"prompt_tokens": prefix_tokens + text_tokens, "completion_tokens": 8,
                          "total_tokens": prefix_tokens + text_tokens + 8,
                          "prompt_tokens_details": {"cached_tokens": cached}}
        return json.dumps(reply).encode()

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line = head.split(b"\r\n", 1)[0]
                length = 0
                for h in head.split(b"\r\n")[1:]:
                    name, _, value = h.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if line.startswith(b"GET /stats"):
                    self._tick()
                    data = json.dumps(self.stats).encode()
                elif line.startswith(b"POST /reset"):
                    self.reset()
                    data = b"{}"
                else:
                    data = await self.answer(body)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def serve(a: argparse.Namespace) -> None:
    async def main() -> None:
        srv = CacheServer(a.latency, a.prefill_s, a.frame_tokens, a.ttl)
        server = await asyncio.start_server(srv.client, "127.0.0.1", 0, limit=1 << 26)
        print(server.sockets[0].getsockname()[1], flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class ServerProcess:
    """The server in a child process; ``call`` for its statistics."""

    def __init__(self, a: argparse.Namespace):
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(a.latency),
                                      "--prefill-s", str(a.prefill_s), "--frame-tokens", str(a.frame_tokens),
                                      "--ttl", str(a.ttl)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def call(self, what: str) -> dict[str, Any]:
        import httpx

        method, path = what.split()
        return httpx.request(method, f"http://127.0.0.1:{self.port}{path}", timeout=30).json()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


# ---------------------------------------------------------------------------- one measurement
def ideal_cached(data: Path, frames: int, frame_tokens: int) -> tuple[int, int]:
    """(model requests, the most a cache can serve: every request of a video but its first)."""
    per_video: dict[str, int] = {}
    for f in (data / "mtqa").glob("*.json"):
        for video, entries in json.loads(f.read_text()).items():
            per_video[video] = per_video.get(video, 0) + len(entries)
    n = sum(per_video.values())
    return n, sum(k - 1 for k in per_video.values() if k) * frames * frame_tokens


def run_args(data: Path, url: str, frames: int, cache: Path, a: argparse.Namespace) -> list[str]:
    # a Gemini model name on an OpenAI-compatible server: estimate counts its frames at 258 tokens, as the server
    return ["--data", str(data), "--model", "openai:gemini-bench", "--judge", "openai:judge", "--model-base-url", url,
            "--judge-base-url", url, "--frames", str(frames), "--judge-runs", "3", "--concurrency",
            str(a.concurrency), "--cache-dir", str(cache), "--max-tokens", "64"]


def measure_run(srv: ServerProcess, data: Path, work: Path, frames: int, order: str, a: argparse.Namespace
                ) -> dict[str, Any]:
    out, cache = work / f"run-{frames}f-{order}", work / f"cache-{frames}f"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    prices = work / "prices.yaml"
    prices.write_text(json.dumps({"prices": {"model": {"input": a.price_input, "output": a.price_output,
                                                       "cached_input": a.price_cached}}}))
    extra = ["--cache-order", "on" if order == "cache-aware" else "off"]
    cmd = [sys.executable, "-m", "mtvbench", "run", *run_args(data, srv.url, frames, cache, a), "--out", str(out),
           "--config", str(prices), "--quiet", *extra]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    srv.call("POST /reset")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        said = proc.stderr + proc.stdout
        return {"frames": frames, "order": order, "error": [said.strip()[-300:]]}
    st = srv.call("GET /stats")
    usage = json.loads((out / "scores.json").read_text())["usage"]["model"]
    n, ideal = ideal_cached(data, frames, a.frame_tokens)
    est = measure_estimate(data, srv.url, frames, cache, a)
    return {"frames": frames, "order": order, "seconds": seconds, "model_calls": st["model"],
            "judge_calls": st["judge"], "cached": st["cached_tokens"], "ideal": ideal,
            "cached_over_ideal": st["cached_tokens"] / ideal if ideal else 0.0,
            "stored_cached": usage["cached_tokens"], "cost": usage["cost"],
            "judge_busy": st["busy"]["judge"] / max(1e-9, st["last_s"] - (st["first_s"] or st["last_s"])),
            # perf_counter is the system's monotonic clock: the server's times and this process's compare
            "before_first_s": (st["first_s"] or t0) - t0, "after_last_s": t0 + seconds - st["last_s"],
            "estimate_s": est["seconds"],
            "estimate_cached": est["model_role"]["cached_tokens"]["cache_aware" if order == "cache-aware"
                                                                  else "today"]}


def measure_estimate(data: Path, url: str, frames: int, cache: Path, a: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "mtvbench", "estimate", *run_args(data, url, frames, cache, a), "--format", "json"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    est = json.loads(proc.stdout) if proc.returncode == 0 else {"model_role": {"cached_tokens": {}}}
    est["seconds"] = seconds
    return est


# ---------------------------------------------------------------------------- the minimal client
async def minimal_client(url: str, data: Path, frames: int, cache: Path, a: argparse.Namespace) -> float:
    """The same model and judge requests (module doc) with nothing but httpx and two semaphores."""
    import base64

    import httpx

    from mtvbench.media.cache import FrameCache
    from mtvbench.media.frames import FrameSettings

    fc = FrameCache(cache)
    per_video: dict[str, int] = {}
    for f in sorted((data / "mtqa").glob("*.json")):
        for video, entries in json.loads(f.read_text()).items():
            per_video[video] = per_video.get(video, 0) + len(entries)
    parts: dict[str, str] = {}
    for video in sorted(per_video):
        jpegs = fc.get(data / "videos" / f"{video}.mp4", FrameSettings(num_frames=frames)).jpegs
        parts[video] = ", ".join('{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,'
                                 + base64.b64encode(j).decode() + '"}}' for j in jpegs)
    model_sem, judge_sem = asyncio.Semaphore(a.concurrency), asyncio.Semaphore(a.concurrency)
    judge_body = json.dumps({"model": "judge", "max_tokens": 64, "messages": [{"role": "user", "content":
                            "Given a current model-generated answer ... Checklist: Q1 ... Q5"}]}).encode()
    limits = httpx.Limits(max_connections=4 * a.concurrency, max_keepalive_connections=4 * a.concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        async def judge() -> None:
            async with judge_sem:
                (await client.post("/chat/completions", content=judge_body,
                                   headers={"Content-Type": "application/json"})).raise_for_status()

        async def model(video: str, k: int) -> None:
            body = ('{"model": "gemini-bench", "messages": [{"role": "user", "content": [' + parts[video]
                    + ', {"type": "text", "text": "Question ' + str(k) + '?"}]}], "max_tokens": 64}').encode()
            async with model_sem:
                (await client.post("/chat/completions", content=body,
                                   headers={"Content-Type": "application/json"})).raise_for_status()
            await asyncio.gather(*(judge() for _ in range(3)))

        t0 = time.perf_counter()
        await asyncio.gather(*(model(v, k) for v, n in sorted(per_video.items()) for k in range(n)))
        return time.perf_counter() - t0


# ---------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mtvbench-prefix-cache"))
    ap.add_argument("--videos", type=int, default=135)
    ap.add_argument("--dialogues", type=int, default=1000)
    ap.add_argument("--video-frames", type=int, default=150, help="frames per generated video (15 fps)")
    ap.add_argument("--frames", default="4,128")
    ap.add_argument("--orders", default="today,cache-aware", help="today, cache-aware (comma-separated)")
    ap.add_argument("--latency", type=float, default=0.25, help="base seconds per request")
    ap.add_argument("--prefill-s", type=float, default=2e-6, help="seconds per uncached prompt token")
    ap.add_argument("--frame-tokens", type=int, default=258, help="prompt tokens per frame (Gemini's per image)")
    ap.add_argument("--ttl", type=float, default=300.0, help="seconds a prefix stays cached after its answer")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--price-input", type=float, default=0.30)
    ap.add_argument("--price-cached", type=float, default=0.075)
    ap.add_argument("--price-output", type=float, default=2.50)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if a.serve:
        serve(a)
        return
    data = make_dataset(a.dir / "data", a.videos, a.dialogues, a.video_frames)
    srv = ServerProcess(a)
    rows, clients = [], {}
    try:
        for frames in (int(f) for f in a.frames.split(",")):
            prime_cache(data, a.dir / f"cache-{frames}f", frames)
            for order in a.orders.split(","):
                rows.append(measure_run(srv, data, a.dir, frames, order.strip(), a))
            srv.call("POST /reset")
            seconds = asyncio.run(minimal_client(srv.url, data, frames, a.dir / f"cache-{frames}f", a))
            st = srv.call("GET /stats")
            clients[frames] = {"seconds": seconds,
                               "judge_busy": st["busy"]["judge"] / max(1e-9, st["last_s"] - st["first_s"])}
    finally:
        srv.close()
    print(f"{a.dialogues} dialogues, {a.videos} videos, golden context, 3 judge runs, concurrency {a.concurrency}; "
          f"server: own process, latency {a.latency}s + {a.prefill_s:g}s per uncached token, {a.frame_tokens} "
          f"tokens per frame, TTL {a.ttl:g}s; {os.cpu_count()} CPUs")
    print("frames | order | cached / ideal | wall s (before first request + after last reply) | minimal client s | "
          "throughput ratio | judge slots busy: mtvbench / client | cost | estimate s | estimate's cached / measured")
    for r in rows:
        if "error" in r:
            print(f"{r['frames']} | {r['order']} | not run: {' '.join(r['error'])}")
            continue
        client = clients[r["frames"]]
        est = r["estimate_cached"]
        ratio = f"{est / r['cached']:.2f}" if est is not None and r["cached"] else "–"
        print(f"{r['frames']} | {r['order']} | {r['cached_over_ideal']:.3f} | {r['seconds']:.1f} "
              f"({r['before_first_s']:.1f} + {r['after_last_s']:.1f}) | {client['seconds']:.1f} | "
              f"{client['seconds'] / r['seconds']:.3f} | {r['judge_busy']:.1f} / {client['judge_busy']:.1f} | "
              f"{r['cost']:.4f} | {r['estimate_s']:.2f} | {ratio}")
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "minimal_client_s": clients}, indent=2))


if __name__ == "__main__":
    main()
