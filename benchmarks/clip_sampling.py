"""Frames PyAV decodes per video under ``run --sampling clip`` vs ``uniform`` (goal: within 1.2x of uniform).

    python benchmarks/clip_sampling.py                    # a generated 3-minute 360p30 video + the bundled sample
    python benchmarks/clip_sampling.py --minutes 10 --dialogues 6 --frames 128

What is counted: every frame the decoder outputs (:func:`mtvbench.media.frames._decode`, wrapped), so the frames
decoded only as references on the way to a target count too and the non-reference frames it skips do not.
Three ways to get a video's frames, each measured in the same run on the same file:

- ``uniform``: the run's uniform frames (one decode per video, shared by every turn);
- ``clip, union``: what ``run --sampling clip`` does: the union of every turn's :func:`clip_indices` decoded
  once (:meth:`FrameCache.get_indices`), each turn selecting its own;
- ``clip, per turn``: each turn's frames decoded on their own (what it would cost without the union).

``floor`` is the fewest frames any exact decode can output for a frame set, from the stream's own reference
structure (learned by one full decode that skips non-reference frames): in every GOP a wanted frame lies in,
each reference frame from the key frame up to the last wanted packet (a later frame cannot be decoded without
them), plus the wanted frames that are not references. Skipping a reference frame instead would change the
frames after it, so no exact strategy decodes fewer; the sampler is at the floor when ``decoded == floor``.
The columns after it say where the frames beyond uniform come from: GOPs touched, reference frames decoded in
them, wanted non-reference frames.

The generated video (see ``benchmarks/frames.py``: key frame every 6 s at a scene change) gets ``--dialogues``
dialogues of ``--turns`` turns (seeded): the first names a clip 10-60 s long, a later turn adds a second one with
probability 0.3, as the released questions do. The bundled sample is measured with its own questions (golden
context, so the text of each turn is its question and the golden history).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
from bisect import bisect_right
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from mtvbench.media import frames as frames_mod  # noqa: E402
from mtvbench.media.frames import (  # noqa: E402
    FrameSettings,
    _open,
    _scan,
    clip_indices,
    probe,
    sample_frames,
    uniform_indices,
)

_count = {"n": 0}
_lock = threading.Lock()
_real_decode = frames_mod._decode


def _counting_decode(stream, packet):  # noqa: ANN001, ANN202 - the decoder's own call, counted
    out = _real_decode(stream, packet)
    with _lock:
        _count["n"] += len(out)
    return out


frames_mod._decode = _counting_decode


def decoded(path: Path, indices: list[int], settings: FrameSettings) -> int:
    """Frames the decoder outputs to take ``indices`` of ``path``."""
    before = _count["n"]
    sample_frames(path, settings, indices=lambda _total: indices)
    return _count["n"] - before


class Floor:
    """The reference structure of one video: its packets (decode order) and which frames are references."""

    def __init__(self, path: Path) -> None:
        container, stream = _open(path)
        self.tl = _scan(container, stream)
        container.close()
        container, stream = _open(path)
        stream.thread_type = "NONE"  # type: ignore[assignment]
        stream.codec_context.skip_frame = "NONREF"
        self.refs = {f.pts for f in container.decode(stream)}  # not counted: the real decoder is not called
        container.close()
        self.shown = self.tl.shown()
        self.pos = {p: i for i, p in enumerate(self.tl.pts)}
        self.keys = [i for i, k in enumerate(self.tl.key) if k]

    def of(self, indices: list[int]) -> dict[str, int]:
        """``floor`` (frames), ``gops`` touched, ``refs`` decoded in them, wanted ``nonref`` frames."""
        last: dict[int, int] = {}
        nonref = 0
        for t in sorted(set(indices)):
            p = self.shown[t]
            i = self.pos[p]
            j = bisect_right(self.keys, i) - 1
            while j > 0 and self.tl.pts[self.keys[j]] > p:  # open GOP: a leading frame needs the GOP before
                j -= 1
            k = self.keys[j]
            last[k] = max(last.get(k, -1), i)
            nonref += p not in self.refs
        refs = sum(self.tl.pts[i] in self.refs for k, end in last.items() for i in range(k, end + 1))
        return {"floor": refs + nonref, "gops": len(last), "refs": refs, "nonref": nonref}


def measure(path: Path, turns: list[list[tuple[float, float]]], n: int, share: float) -> dict[str, float]:
    info = probe(path)
    total, dur = info.total_frames, info.duration_s
    settings = FrameSettings(num_frames=n, max_side=360)
    per_turn = [clip_indices(total, dur, n, r, share) for r in turns]
    union = sorted({i for t in per_turn for i in t})
    uni = decoded(path, uniform_indices(total, n), settings)
    clip = decoded(path, union, settings)
    each = sum(decoded(path, t, settings) for t in {tuple(t): None for t in per_turn})
    floor = Floor(path)
    fu, fc = floor.of(uniform_indices(total, n)), floor.of(union)
    return {"total": total, "uniform": uni, "union_frames": len(union), "clip": clip, "per_turn": each,
            "gops": len(floor.keys), **{f"u_{k}": v for k, v in fu.items()}, **{f"c_{k}": v for k, v in fc.items()}}


def synthetic_turns(duration: float, dialogues: int, turns: int, seed: int = 0) -> list[list[tuple[float, float]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(dialogues):
        length = rng.uniform(10, 60)
        start = rng.uniform(0, max(0.0, duration - length))
        named = [(start, start + length)]
        for _ in range(turns):
            if len(out) and rng.random() < 0.3:
                s2 = rng.uniform(0, duration - 10)
                named = [*named, (s2, s2 + rng.uniform(5, 30))]
            out.append(list(named))
    return out


def sample_turns(root: Path) -> dict[str, list[list[tuple[float, float]]]]:
    from mtvbench.data.official import load_benchmark
    from mtvbench.run.plan import rounds_to_call, turn_ranges

    bench = load_benchmark(root)
    out: dict[str, list[list[tuple[float, float]]]] = {}
    for d in bench.dialogues:
        dur = probe(bench.videos[d.video]).duration_s
        for r in rounds_to_call(d, "golden"):
            out.setdefault(d.video, []).append([(x.start, x.end) for x in turn_ranges(d, r, "golden", dur).ranges])
    return out


def row(name: str, m: dict[str, float]) -> str:
    return (f"{name:<28} {m['total']:>7} {m['uniform']:>9} {m['clip']:>11} {m['clip'] / m['uniform']:>7.2f}x "
            f"{m['per_turn']:>10} {m['per_turn'] / m['uniform']:>7.2f}x "
            f"{m['u_floor']:>7}/{m['c_floor']:<7} {m['c_floor'] / m['u_floor']:>6.2f}x")


def why(name: str, m: dict[str, float]) -> str:
    return (f"{name:<28} {m['gops']:>5} {m['u_gops']:>5}/{m['c_gops']:<5} {m['u_refs']:>6}/{m['c_refs']:<6} "
            f"{m['u_nonref']:>5}/{m['c_nonref']:<5} {m['union_frames']:>6}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--height", type=int, default=360)
    ap.add_argument("--frames", type=int, default=128)
    ap.add_argument("--share", type=float, default=0.5)
    ap.add_argument("--dialogues", type=int, default=6)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "mtvbench-bench")
    ap.add_argument("--no-sample", action="store_true", help="skip the bundled sample")
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    print(f"{'video':<28} {'frames':>7} {'uniform':>9} {'clip union':>11} {'ratio':>8} {'per turn':>10} {'ratio':>8} "
          f"{'floor u/clip':>15} {'ratio':>7}")
    print(f"{'':<28} {'':>7} {'(decoded)':>9} {'(decoded)':>11} {'':>8} {'(decoded)':>10}")
    rows: list[tuple[str, dict[str, float]]] = []
    from frames import generate  # benchmarks/frames.py

    video = a.dir / f"clip-{a.minutes:g}min-{a.height}p.mp4"
    if not video.exists():
        generate(video, a.minutes, a.height)
    dur = probe(video).duration_s
    m = measure(video, synthetic_turns(dur, a.dialogues, a.turns), a.frames, a.share)
    rows.append((f"generated {a.minutes:g} min x{a.dialogues} dlg", m))
    print(row(*rows[-1]))
    if not a.no_sample:
        from mtvbench.data.sample import materialize

        root = materialize(a.dir / "sample")
        totals: dict[str, float] = {}
        for v, turns in sorted(sample_turns(root).items()):
            mv = measure(root / "videos" / f"{v}.mp4", turns, a.frames, a.share)
            rows.append((f"sample {v}", mv))
            print(row(*rows[-1]))
            for k, x in mv.items():
                totals[k] = totals.get(k, 0) + x
        rows.append(("sample, all videos", totals))
        print(row(*rows[-1]))
    print("\nwhere the frames come from (uniform/clip union): GOPs touched, reference frames decoded in them, "
          "wanted non-reference frames")
    print(f"{'video':<28} {'GOPs':>5} {'touched':>11} {'refs':>13} {'nonref':>11} {'union':>6}")
    for name, m in rows:
        print(why(name, m))


if __name__ == "__main__":
    main()
