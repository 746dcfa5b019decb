from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pytest

from mtvbench.analysis.metadata import (
    SceneCache,
    SceneSettings,
    dialogue_ranges,
    load_metadata_file,
    merge_ranges,
    parse_time_ranges,
    resolve_metadata,
)
from mtvbench.data.schema import Dialogue, Round, Task


def test_parse_time_ranges():
    assert parse_time_ranges("In the video clip from 00:01:37 to 00:03:34, what happens?") == [(97.0, 214.0)]
    assert parse_time_ranges("between 01:05 and 02:00 and 1:00:00-1:00:30") == [(65.0, 120.0), (3600.0, 3630.0)]
    assert parse_time_ranges("at 00:10 nothing") == []
    assert merge_ranges([(10, 20), (0, 5), (15, 30), (40, 50)]) == [(0, 5), (10, 30), (40, 50)]


def _dlg(questions, video="v", event="0"):
    return Dialogue(task=Task.MEMORY_RECALL, video=video, event=event,
                    rounds=[Round(index=i, user=q, assistant="a") for i, q in enumerate(questions, 1)])


def test_dialogue_ranges_union_or_whole_video():
    d = _dlg(["from 00:00:02 to 00:00:04 what?", "and from 00:00:03 to 00:00:05?", "from 00:00:08 to 00:00:09?"])
    assert dialogue_ranges(d) == [(2.0, 5.0), (8.0, 9.0)]
    assert dialogue_ranges(_dlg(["what is shown?"])) is None


def _cuts_video(path: Path, colours, seconds: float = 2.0, fps: int = 10) -> Path:
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=fps)
        s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
        for col in colours:
            for _ in range(int(seconds * fps)):
                img = np.zeros((48, 64, 3), np.uint8)
                img[:] = col
                for p in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                    c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


def test_scene_estimation_over_ranges_is_cached(tmp_path):
    pytest.importorskip("scenedetect", reason="PySceneDetect not installed (pip install 'mtvbench[build]')")
    video = _cuts_video(tmp_path / "v.mp4", [(220, 30, 30), (245, 245, 245), (10, 10, 90), (240, 220, 20)])
    cache = SceneCache(tmp_path / "cache", SceneSettings(min_scene_len=5))
    assert cache.get(video, None) == 4  # four 2-second shots, hard cuts
    assert cache.get(video, [(0.5, 3.5)]) == 2  # spans shots 1-2
    assert cache.get(video, [(0.5, 1.5), (4.5, 7.5)]) == 1 + 2
    files = list((tmp_path / "cache").glob("v-*.json"))
    assert len(files) == 1
    stored = json.loads(files[0].read_text())
    assert any(k.endswith("|all") for k in stored) and len(stored) == 4
    # cached: answered without computing
    assert cache.get(video, [(0.5, 3.5)], compute=False) == 2
    assert cache.get(video, [(1.0, 2.0)], compute=False) is None
    d = _dlg(["In the clip from 00:00:00 to 00:00:03, what colour?", "then?"])
    meta = resolve_metadata([d], {"v": video}, scene_cache=cache, estimate_scenes=True)
    m = meta[d.id]
    assert m.scenes == 2 and m.scenes_source == "estimated" and m.duration_s == pytest.approx(8.0)


def test_metadata_file_precedence(tmp_path):
    d0, d1 = _dlg(["q"], event="0"), _dlg(["q"], event="1")
    csv_file = tmp_path / "m.csv"
    csv_file.write_text("video,event,category,scenes,duration_min\nv,,Sports,,12\nv,1,,7,\n")
    rows = load_metadata_file(csv_file)
    assert rows[0].duration_s == pytest.approx(720.0) and rows[1].scenes == 7
    meta = resolve_metadata([d0, d1], {}, metadata_file=csv_file, durations={})
    assert meta[d0.id].category == "Sports" and meta[d0.id].scenes is None and meta[d0.id].duration_s == 720.0
    assert meta[d1.id].category == "Sports" and meta[d1.id].scenes == 7 and meta[d1.id].scenes_source == "file"
    js = tmp_path / "m.json"
    js.write_text(json.dumps({"v": {"category": "Film", "duration_s": 65, "events": {"0": {"scenes": 3}}}}))
    meta = resolve_metadata([d0, d1], {}, metadata_file=js, durations={"v": 99.0})
    assert meta[d0.id].scenes == 3 and meta[d1.id].scenes is None and meta[d1.id].duration_s == 65.0
