"""Throughput of the local runner against a fixed-latency loopback server.

    python benchmarks/throughput.py                          # 1000 dialogues / 100 videos, 4 and 128 frames
    python benchmarks/throughput.py --dialogues 200 --videos 20 --frames 4

A synthetic dataset (``--videos`` short generated H.264 videos, ``--dialogues`` dialogues with one
scored turn each, spread over the six tasks) is written once to ``--dir``. An OpenAI-compatible
server on 127.0.0.1 (its own, in this process, threaded) answers every call after exactly
``--latency`` seconds: the model with a short text, the judge with JSON verdicts. The evaluation
(``mtvbench run``, ``--judge-runs 3``) runs in a child process with a cold frame cache (``seconds``
includes decoding) or, with ``--cache warm``, one filled beforehand (a second model over the same
videos); ``CPU s/call`` is the child's user+sys time (``os.wait4``) per
call, ``peak RSS`` its ``ru_maxrss``.

The server is a minimal asyncio HTTP/1.1 server in a thread of this process, so that it adds as
little as possible to the latency it simulates (a thread-per-request ``http.server`` adds about
50 ms per call under this load). The reference is the latency bound: with ``C`` calls in flight
per role, N model calls and M judge calls cannot finish faster than ``max(N, M) * latency / C``
(+ one latency to fill the pipeline).
``time / bound`` is 1.0 for a perfect pipeline; ``mean in flight`` is the time-weighted number
of calls the server was serving, per role, over the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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


class Meter:
    """Time-weighted number of requests in flight, per role."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inflight = {"model": 0, "judge": 0}
        self.area = {"model": 0.0, "judge": 0.0}
        self.calls = {"model": 0, "judge": 0}
        self.last = time.perf_counter()
        self.first: float | None = None
        self.end = 0.0

    def _tick(self) -> None:
        now = time.perf_counter()
        for k, n in self.inflight.items():
            self.area[k] += n * (now - self.last)
        self.last = now

    def enter(self, role: str) -> None:
        with self.lock:
            self._tick()
            if self.first is None:
                self.first = self.last
            self.inflight[role] += 1
            self.calls[role] += 1

    def leave(self, role: str) -> None:
        with self.lock:
            self._tick()
            self.inflight[role] -= 1
            self.end = self.last

    def mean(self, role: str) -> float:
        span = self.end - (self.first or self.end)
        return self.area[role] / span if span > 0 else 0.0


def _reply(role: str) -> bytes:
    content = (json.dumps({f"A{i}": "Yes" if i < 5 else "No" for i in range(1, 6)})
               if role == "judge" else "A short answer that mentions fact 1.")
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


class LoopbackServer:
    """A minimal HTTP/1.1 server on asyncio streams (keep-alive, Content-Length bodies) in a
    thread of its own: one event loop, no thread per request, so the server adds as little
    as possible to the fixed latency it simulates."""

    def __init__(self, latency: float, meter: Meter):
        self.latency, self.meter = latency, meter
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait()

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                # the judge's prompt opens its (small) body; a model body opens with its frames: no JSON
                # parsing of 10 MB bodies here, so the server costs the machine little
                role = "judge" if JUDGE_PREFIX.encode() in (await reader.readexactly(length))[:4096] else "model"
                self.meter.enter(role)
                try:
                    await asyncio.sleep(self.latency)
                    data = _reply(role)
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(data)).encode() + b"\r\n\r\n" + data)
                    await writer.drain()
                finally:
                    self.meter.leave(role)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


# ---------------------------------------------------------------------------- one measurement


def prime_cache(data: Path, cache: Path, frames: int) -> None:
    """Fill the frame cache the way a first run (or another model's run) over the same videos does."""
    from mtvbench.media.cache import FrameCache
    from mtvbench.media.frames import FrameSettings

    fc = FrameCache(cache)
    for p in sorted((data / "videos").glob("*.mp4")):
        fc.get(p, FrameSettings(num_frames=frames))


def measure(data: Path, work: Path, frames: int, latency: float, concurrency: int, extra: list[str],
            warm: bool = False) -> dict[str, Any]:
    meter = Meter()
    srv = LoopbackServer(latency, meter)
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
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    srv.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"run failed ({status}):\n{err[-3000:]}")
    n_model, n_judge = meter.calls["model"], meter.calls["judge"]
    bound = max(n_model, n_judge) * latency / concurrency + latency
    span = meter.end - (meter.first or meter.end)
    return {"frames": frames, "cache": "warm" if warm else "cold", "seconds": seconds, "span_s": span, "bound_s": bound,
            "time_over_bound": seconds / bound, "span_over_bound": span / bound,
            "model_calls": n_model, "judge_calls": n_judge,
            "mean_inflight_model": meter.mean("model"), "mean_inflight_judge": meter.mean("judge"),
            "cpu_s_per_call": (ru.ru_utime + ru.ru_stime) / max(1, n_model + n_judge),
            "peak_rss_mb": ru.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mtvbench-throughput"))
    ap.add_argument("--videos", type=int, default=100)
    ap.add_argument("--dialogues", type=int, default=1000)
    ap.add_argument("--video-frames", type=int, default=150, help="frames per generated video (15 fps)")
    ap.add_argument("--frames", default="4,128", help="comma-separated frames per call to measure")
    ap.add_argument("--latency", type=float, default=0.25)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--cache", default="cold", choices=("cold", "warm", "both"),
                    help="cold: frames decoded during the run; warm: the frame cache filled beforehand")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    ap.add_argument("extra", nargs="*", help="extra arguments for `mtvbench run` (after --)")
    a = ap.parse_args()
    data = make_dataset(a.dir / "data", a.videos, a.dialogues, a.video_frames)
    temps = ("cold", "warm") if a.cache == "both" else (a.cache,)
    rows = [measure(data, a.dir, int(f), a.latency, a.concurrency, a.extra, warm=t == "warm")
            for f in a.frames.split(",") for t in temps]
    print(f"{a.dialogues} dialogues, {a.videos} videos, latency {a.latency}s, concurrency {a.concurrency}, "
          f"3 judge runs; {os.cpu_count()} CPUs")
    hdr = ("frames", "cache", "seconds", "calls span s", "bound s", "time/bound", "span/bound", "model", "judge",
           "in-flight model", "in-flight judge", "CPU s/call", "peak RSS MB")
    print(" | ".join(hdr))
    for r in rows:
        print(" | ".join([str(r["frames"]), r["cache"], f"{r['seconds']:.1f}", f"{r['span_s']:.1f}",
                          f"{r['bound_s']:.1f}", f"{r['time_over_bound']:.2f}", f"{r['span_over_bound']:.2f}",
                          str(r["model_calls"]), str(r["judge_calls"]),
                          f"{r['mean_inflight_model']:.1f}", f"{r['mean_inflight_judge']:.1f}",
                          f"{r['cpu_s_per_call'] * 1000:.1f} ms", f"{r['peak_rss_mb']:.0f}"]))
    print("time/bound = the run's wall time (process start to exit) over the latency bound max(N_model, N_judge) "
          "x latency / concurrency + latency; span/bound the same from the first call to the last answer "
          "(1.00 is perfect; >= 0.9 of the bound means <= 1.11). in-flight: time-weighted calls the server "
          "was serving over the whole span (model calls end long before the judge's).")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
