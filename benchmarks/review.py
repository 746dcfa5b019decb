"""Benchmark the review app at the scale of the released benchmark (1,000 dialogues, 135 videos).

    python benchmarks/review.py                  # 1000 dialogues
    python benchmarks/review.py --dialogues 3000

The dataset repeats the bundled sample's dialogues under new video names (the video files
are copies of the sample's). Every request goes through the real ASGI app (Starlette's test
client, no network). Printed: the time to open the source (load + validate + sync into the
store), the per-request time of the calls a page makes, and the cost of a decision relative
to reading an item (one write transaction versus a read).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def build_dataset(root: Path, n: int, n_videos: int) -> Path:
    from mtvbench.data.sample import materialize

    sample = materialize(root / "sample")
    stems = [p.stem for p in (sample / "mtqa").glob("*.json")]
    dialogues = [(s, v, e) for s in stems for v, es in json.loads((sample / "mtqa" / f"{s}.json").read_text()).items()
                 for e in es]
    ck = {s: json.loads((sample / "checklist" / f"{s}_CheckList.json").read_text()) for s in stems}
    data = root / "data"
    mtqa: dict[str, dict] = {s: {} for s in stems}
    cks: dict[str, dict] = {s: {} for s in stems}
    for i in range(n):
        stem, video, entry = dialogues[i % len(dialogues)]
        name = f"v{i % n_videos:03d}"
        event = len(mtqa[stem].setdefault(name, []))
        mtqa[stem][name].append({"event_index": event, "mtqa": entry["mtqa"]})
        src_ck = ck[stem].get(video, {}).get(str(entry["event_index"]))
        if src_ck:
            cks[stem].setdefault(name, {})[str(event)] = src_ck
        if not (data / "videos" / f"{name}.mp4").exists():
            (data / "videos").mkdir(parents=True, exist_ok=True)
            shutil.copy(sample / "videos" / f"{video}.mp4", data / "videos" / f"{name}.mp4")
    for s in stems:
        (data / "mtqa").mkdir(parents=True, exist_ok=True)
        (data / "checklist").mkdir(parents=True, exist_ok=True)
        (data / "mtqa" / f"{s}.json").write_text(json.dumps(mtqa[s]))
        (data / "checklist" / f"{s}_CheckList.json").write_text(json.dumps(cks[s]))
    return data


def timed(fn, repeat: int) -> float:  # noqa: ANN001
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialogues", type=int, default=1000)
    ap.add_argument("--videos", type=int, default=135)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    from starlette.testclient import TestClient

    from mtvbench.review.app import create_app
    from mtvbench.review.decisions import CRITERIA
    from mtvbench.review.source import open_source
    from mtvbench.review.store import ReviewStore

    with tempfile.TemporaryDirectory() as tmp:
        data = build_dataset(Path(tmp), args.dialogues, args.videos)
        t = time.perf_counter()
        source = open_source(data)
        app = create_app(source, ReviewStore(source.default_store), trusted_hosts={"testserver"})
        open_s = time.perf_counter() - t
        c = TestClient(app)
        h = {"X-Review-User": "ann1"}
        ids = [i["id"] for i in c.get("/api/items", headers=h).json()["items"]]
        list_s = timed(lambda: c.get("/api/items", headers=h), args.repeat)
        item_s = timed(lambda: c.get("/api/items/" + ids[len(ids) // 2], headers=h), args.repeat)
        next_s = timed(lambda: c.get("/api/next", headers=h), args.repeat)
        it = iter(ids)

        def decide() -> None:
            body = {"annotator": "ann1", "decision": "accept", "active_seconds": 30.0,
                    "criteria": {k: {"met": True} for k in CRITERIA}}
            r = c.post("/api/items/" + next(it) + "/review", headers=h, json=body)
            assert r.status_code == 200, r.text

        mid = ids[len(ids) // 2]
        draft = {"content_hash": c.get("/api/items/" + mid, headers=h).json()["content_hash"],
                 "data": {"mode": "revise", "comment": "x" * 200, "fields": {"1.user": "y" * 300}}}
        draft_s = timed(lambda: c.put("/api/items/" + mid + "/draft", headers=h, json=draft), args.repeat)
        post_s = timed(decide, args.repeat)
        senior = {"X-Review-User": "lead", "X-Review-Role": "senior"}
        prog_s = timed(lambda: c.get("/api/progress", headers=senior), max(3, args.repeat // 4))
        own_s = timed(lambda: c.get("/api/progress", headers=h), max(3, args.repeat // 4))
    print(f"{len(ids)} dialogues over {args.videos} videos")
    print(f"open source (load, validate, sync store): {open_s * 1000:8.1f} ms")
    print(f"GET  /api/items (list)                  : {list_s * 1000:8.1f} ms")
    print(f"GET  /api/items/ID (one dialogue)       : {item_s * 1000:8.1f} ms")
    print(f"GET  /api/next                          : {next_s * 1000:8.1f} ms")
    print(f"PUT  /api/items/ID/draft                : {draft_s * 1000:8.1f} ms")
    print(f"POST /api/items/ID/review               : {post_s * 1000:8.1f} ms  ({post_s / item_s:.1f}x a read)")
    print(f"GET  /api/progress (senior: agreement)  : {prog_s * 1000:8.1f} ms")
    print(f"GET  /api/progress (annotator: own)     : {own_s * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
