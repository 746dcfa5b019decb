"""Benchmark the construction pipeline: seconds per stage per minute of video.

    python benchmarks/build.py                        # 2 videos x 60 s, 320x240, 25 fps, loopback server
    python benchmarks/build.py --seconds 120 --backend offline --width 640 --height 360

Videos are synthetic (tests/support/scene_videos.py: a hard cut every ``--scene-s`` seconds, a
coloured object per scene, the same object colour recurring every other scene). LLM stages
answer with the scripted replies of the tests (tests/support/build_replies.py), either through the
real OpenAI-compatible loopback HTTP server (``loopback``: includes JPEG/base64/HTTP cost)
or in process (``offline``: pipeline overhead only). Detection uses the tests' colour-blob
detector (YOLO time is model- and hardware-specific and not measured here). Model latency
of a real API is NOT included: multiply the number of calls printed by your model's
latency (divided by ``--concurrency``) to estimate it.

A second pass deletes the artifact of every LLM stage and builds again: the replies come
from the workspace's call journal (no model call), so it shows what resuming costs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.support import scene_videos as synth  # noqa: E402
from tests.support.build_replies import Scripted  # noqa: E402
from tests.support.detector import ColourBlobDetector  # noqa: E402

from mtvbench.construct.config import BuildConfig  # noqa: E402
from mtvbench.construct.export import ExportReport  # noqa: E402
from mtvbench.construct.pipeline import Builder  # noqa: E402
from mtvbench.construct.stages import STAGES, roles, stage_names  # noqa: E402
from mtvbench.construct.workspace import Workspace  # noqa: E402
from mtvbench.models.registry import create_backend  # noqa: E402
from mtvbench.models.settings import BackendOptions  # noqa: E402
from mtvbench.records import GenerationRequest, GenerationResult  # noqa: E402

#: the stages that ask a model
LLM_STAGES = [s for s in stage_names() if STAGES.get(s).role is not None]


class OfflineScripted:
    """An in-process backend answering like the scripted loopback server."""

    name = "offline-scripted"

    def __init__(self) -> None:
        self.script = Scripted()
        self.calls = 0

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.calls += 1
        n = len(request.frames) if request.frames is not None else 0
        text = self.script(request.prompt, n)
        return GenerationResult(text=text, raw_text=text)

    async def aclose(self) -> None:
        return None


def make_video(path: Path, seconds: float, scene_s: float, fps: int) -> Path:
    scenes = []
    n_scenes = max(1, round(seconds / scene_s))
    hues = [10, 100, 40, 140, 70, 160]
    for i in range(n_scenes):
        colour = synth.RED if i % 2 == 0 else synth.BLUE
        scenes.append(synth.Scene(int(scene_s * fps), hue=hues[i % len(hues)], sat=60 + 20 * (i % 4),
                                  val=(90 + 10 * (i % 3), 190), obj=("square" if i % 2 == 0 else "disc", colour)))
    return synth.write_scenes(path, scenes, fps=fps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--scene-s", type=float, default=6.0)
    ap.add_argument("--fps", type=int, default=25)
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=240)
    ap.add_argument("--backend", choices=["loopback", "offline"], default="loopback")
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    synth.SIZE = (args.width, args.height)  # the generator reads the frame size from the module

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        for i in range(args.videos):
            make_video(root / "raw" / f"v{i}.mp4", args.seconds, args.scene_s, args.fps)
        print(f"generated {args.videos} x {args.seconds:.0f} s videos ({args.width}x{args.height}, {args.fps} fps) "
              f"in {time.perf_counter() - t0:.1f} s")
        ws = Workspace(root / "ws")
        vids = ws.register(root / "raw")
        minutes = args.videos * args.seconds / 60
        cfg = BuildConfig(concurrency=args.concurrency)

        server = None
        if args.backend == "loopback":
            from tests.support.openai_server import LoopbackServer, ServerState

            server = LoopbackServer(ServerState(model_reply=Scripted())).__enter__()
            backend = create_backend("openai:bench", BackendOptions(base_url=server.url, api_key_env="MTV_BENCH_NONE"))
        else:
            backend = OfflineScripted()
        backends = dict.fromkeys(roles(), backend)
        builder = Builder(ws, cfg, backends=backends, detector=ColourBlobDetector())
        rows: list[tuple[str, float, int]] = []

        replay: list[tuple[str, float, int]] = []

        async def run_stages(into: list[tuple[str, float, int]]) -> None:
            b = Builder(ws, cfg, backends=backends, detector=ColourBlobDetector()) if into is replay else builder
            for stage in stage_names():
                n_req = len(server.state.requests) if server else backend.calls
                t = time.perf_counter()
                reports = await b.run_stage(stage, vids)
                dt = time.perf_counter() - t
                bad = [r for r in reports if r.status in ("failed", "incomplete", "blocked")]
                if bad:
                    print(f"  {stage}: {[(r.video, r.status, r.message) for r in bad]}")
                into.append((stage, dt, (len(server.state.requests) if server else backend.calls) - n_req))
            await b.aclose()

        async def both() -> ExportReport:
            await run_stages(rows)
            t = time.perf_counter()
            rep = builder.export(vids, root / "out", video_mode="link")
            rows.append(("export", time.perf_counter() - t, 0))
            for v in vids:
                for stage in LLM_STAGES:
                    ws.path(v.name, stage).unlink()
            await run_stages(replay)
            await backend.aclose()
            return rep

        try:
            rep = asyncio.run(both())
        finally:
            if server is not None:
                server.__exit__(None, None, None)

        print(f"\nbackend: {args.backend}; {minutes:.1f} minute(s) of video; {rep.dialogues} dialogues exported")
        print(f"{'stage':<12}{'seconds':>10}{'s / video-min':>16}{'model calls':>14}")
        for stage, dt, calls in rows:
            print(f"{stage:<12}{dt:>10.2f}{dt / minutes:>16.2f}{calls:>14}")
        total = sum(dt for _, dt, _ in rows)
        print(f"{'total':<12}{total:>10.2f}{total / minutes:>16.2f}{sum(c for *_, c in rows):>14}")
        llm = [(s, dt, c) for s, dt, c in replay if s in LLM_STAGES]
        first = sum(dt for s, dt, _ in rows if s in LLM_STAGES)
        again = sum(dt for _, dt, _ in llm)
        print(f"\nrebuilt the {len(llm)} LLM stages from the call journal (their artifacts deleted): "
              f"{again:.2f} s, {sum(c for *_, c in llm)} model calls "
              f"(first build of those stages: {first:.2f} s, {sum(c for s, _, c in rows if s in LLM_STAGES)} calls)")


if __name__ == "__main__":
    main()
