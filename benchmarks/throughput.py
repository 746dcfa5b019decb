"""Throughput of the local runner against a fixed-latency loopback server.

    python benchmarks/throughput.py                          # 1000 dialogues / 100 videos, 4 and 128 frames
    python benchmarks/throughput.py --dialogues 200 --videos 20 --frames 4

A synthetic dataset (``--videos`` short generated H.264 videos, ``--dialogues`` dialogues with one
scored turn each, spread over the six tasks) is written once to ``--dir``. An OpenAI-compatible
server on 127.0.0.1 (its own, in this process, threaded) answers every call after exactly
``--latency`` seconds: the model with a short text, the judge with JSON verdicts. The evaluation
(``mtvbench run``, ``--judge-runs 3``) runs in a child process with a cold frame cache, so
``seconds`` includes decoding; ``CPU s/call`` is the child's user+sys time (``os.wait4``) per
call, ``peak RSS`` its ``ru_maxrss``.

The reference is the latency bound: with ``C`` calls in flight per role, N model calls and M judge
calls cannot finish faster than ``max(N, M) * latency / C`` (+ one latency to fill the pipeline).
``time / bound`` is 1.0 for a perfect pipeline; ``mean in flight`` is the time-weighted number
of calls the server was serving, per role, over the whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


def make_server(latency: float, meter: Meter) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: Any) -> None:
            return

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            text = ""
            for m in body.get("messages", []):
                c = m.get("content")
                parts = [{"type": "text", "text": c}] if isinstance(c, str) else (c or [])
                text = next((p["text"] for p in parts if p.get("type") == "text"), text)
            role = "judge" if text.startswith(JUDGE_PREFIX) else "model"
            meter.enter(role)
            try:
                time.sleep(latency)
                content = (json.dumps({f"A{i}": "Yes" if i < 5 else "No" for i in range(1, 6)})
                           if role == "judge" else "A short answer that mentions fact 1.")
                data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": content}}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                                  ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                meter.leave(role)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    return srv


# ---------------------------------------------------------------------------- one measurement


def measure(data: Path, work: Path, frames: int, latency: float, concurrency: int, extra: list[str]
            ) -> dict[str, Any]:
    meter = Meter()
    srv = make_server(latency, meter)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    out = work / f"run-{frames}f"
    cache = work / f"cache-{frames}f"
    for p in (out, cache):
        subprocess.run(["rm", "-rf", str(p)], check=True)
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
    srv.shutdown()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"run failed ({status}):\n{err[-3000:]}")
    n_model, n_judge = meter.calls["model"], meter.calls["judge"]
    bound = max(n_model, n_judge) * latency / concurrency + latency
    return {"frames": frames, "seconds": seconds, "bound_s": bound, "time_over_bound": seconds / bound,
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
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    ap.add_argument("extra", nargs="*", help="extra arguments for `mtvbench run` (after --)")
    a = ap.parse_args()
    data = make_dataset(a.dir / "data", a.videos, a.dialogues, a.video_frames)
    rows = [measure(data, a.dir, int(f), a.latency, a.concurrency, a.extra) for f in a.frames.split(",")]
    print(f"{a.dialogues} dialogues, {a.videos} videos, latency {a.latency}s, concurrency {a.concurrency}, "
          f"3 judge runs, cold frame cache; {os.cpu_count()} CPUs")
    hdr = ("frames", "seconds", "bound s", "time/bound", "model", "judge", "in-flight model", "in-flight judge",
           "CPU s/call", "peak RSS MB")
    print(" | ".join(hdr))
    for r in rows:
        print(" | ".join([str(r["frames"]), f"{r['seconds']:.1f}", f"{r['bound_s']:.1f}",
                          f"{r['time_over_bound']:.2f}", str(r["model_calls"]), str(r["judge_calls"]),
                          f"{r['mean_inflight_model']:.1f}", f"{r['mean_inflight_judge']:.1f}",
                          f"{r['cpu_s_per_call'] * 1000:.1f} ms", f"{r['peak_rss_mb']:.0f}"]))
    print("time/bound = wall time over the latency bound max(N_model, N_judge) x latency / concurrency "
          "+ latency (1.00 is perfect); >= 0.9 of the bound means time/bound <= 1.11")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
