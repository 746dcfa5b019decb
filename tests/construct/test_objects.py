"""Stages 5-8: detection (colour-blob Detector), memory bank, cross-scene retrieval."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mtvbench.construct.calls import StageModel
from mtvbench.construct.stages.crossscene import CrossSceneSettings, retrieve_units
from mtvbench.construct.stages.detect import detect_objects
from mtvbench.construct.stages.keyframes import extract_keyframes
from mtvbench.construct.stages.merge import MergeResult, Segment
from mtvbench.construct.stages.objects import BankSettings, MemoryBank, Observation, build_objects
from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions
from tests.support.build_replies import Scripted
from tests.support.detector import ColourBlobDetector
from tests.support.openai_server import LoopbackServer, ServerState


def _hist(hot: int, n: int = 960) -> list[float]:
    h = [0.0] * n
    h[hot] = 0.8
    h[hot + 1] = 0.2
    return h


def obs(det: int, frame: int, hot: int, caption: str, segment: int, label: str = "shape") -> Observation:
    return Observation(detection=det, label=label, caption=caption, histogram=_hist(hot), segment=segment,
                       frame=frame, time_s=frame / 10)


def test_memory_bank_with_known_detections() -> None:
    bank = MemoryBank(BankSettings())
    ids = bank.add_all([
        obs(0, 0, 10, "a red square", 0), obs(1, 0, 500, "a blue disc", 0),
        obs(2, 5, 10, "a red square", 0), obs(3, 5, 500, "a blue disc", 0),
        obs(4, 90, 10, "a red square with a shadow", 2),  # later segment, same look
        obs(5, 90, 10, "a red square", 2, label="person"),  # same look but another class
        obs(6, 95, 300, "a red square", 2),  # same caption, different colour feature
    ])
    assert ids[0] == ids[2] == ids[4]
    assert ids[1] == ids[3] != ids[0]
    assert ids[5] not in (ids[0], ids[1])
    assert ids[6] not in (ids[0], ids[1], ids[5])
    red = next(e for e in bank.entries if e.id == ids[0])
    assert red.segments == [0, 2]
    assert [a.detection for a in red.appearances] == [0, 2, 4]
    assert "a red square" in red.captions and "a red square with a shadow" in red.captions


def test_two_identical_objects_in_one_frame_get_two_ids() -> None:
    bank = MemoryBank()
    ids = bank.add_all([obs(0, 0, 10, "a red square", 0), obs(1, 0, 10, "a red square", 0)])
    assert ids[0] != ids[1]


def test_text_similarity_counts() -> None:
    """Same colour, different caption: the text term decides against a weak visual match."""
    s = BankSettings(visual_weight=0.5, text_weight=0.5, threshold=0.7, min_visual=0.0)
    bank = MemoryBank(s)
    h1 = _hist(10)
    h2 = list(h1)
    h2[10], h2[11], h2[12] = 0.5, 0.2, 0.3  # similar but not equal colour
    a = Observation(detection=0, label="x", caption="a wooden chair", histogram=h1, segment=0, frame=0, time_s=0)
    b = Observation(detection=1, label="x", caption="a wooden chair", histogram=h2, segment=1, frame=9, time_s=1)
    c = Observation(detection=2, label="x", caption="a sleeping cat", histogram=h2, segment=1, frame=19, time_s=2)
    ids = bank.add_all([a, b, c])
    assert ids[0] == ids[1] and ids[2] != ids[0]


def test_detect_bank_and_cross_scene_on_video(scene_video: Path, tmp_path: Path) -> None:
    vdir = tmp_path / "ws"
    kf = extract_keyframes("three", scene_video, vdir / "keyframes")
    dets = detect_objects("three", vdir, kf, ColourBlobDetector())
    assert dets.detector == "colour-blob"
    assert len(dets.detections) == len(kf.frames)  # one shape per kept frame
    assert all((vdir / d.crop).is_file() for d in dets.detections)
    merge = MergeResult(video="three", segments=[
        Segment(index=i, clips=[i], start_s=5.0 * i, end_s=5.0 * (i + 1), caption=f"scene {i} caption")
        for i in range(3)])
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        backend = create_backend("openai:test", BackendOptions(base_url=srv.url))
        model = StageModel(backend)
        res = asyncio.run(build_objects("three", vdir, dets, merge, model))
        object_requests = [r for r in srv.state.requests if r["text"].startswith("The image is a crop")]
    assert res.complete and len(res.captions) == len(dets.detections)
    assert all(r["images"] == 1 for r in object_requests)
    assert len(res.entries) == 2  # the red square (scenes 0 and 2) and the blue disc (scene 1)
    by_seg = {tuple(e.segments): e for e in res.entries}
    assert set(by_seg) == {(0, 2), (1,)}
    red = by_seg[(0, 2)]
    assert len({res.assignments[d.id] for d in dets.detections if d.time_s < 5 or d.time_s >= 10}) == 1
    assert all(res.assignments[a.detection] == red.id for a in red.appearances)

    cross = retrieve_units("three", merge, res, CrossSceneSettings(theme_threshold=None))
    singles = [u for u in cross.units if u.kind == "single"]
    multi = [u for u in cross.units if u.kind == "cross"]
    assert [u.id for u in singles] == ["S0", "S1", "S2"]
    assert len(multi) == 1
    x = multi[0]
    assert x.segments == [0, 2] and x.objects == [red.id] and x.link == "objects"
    assert x.ranges == [(0.0, 5.0), (10.0, 15.0)]
    assert red.id in x.object_lines[0]


def test_cross_scene_theme_links() -> None:
    merge = MergeResult(video="v", segments=[
        Segment(index=0, clips=[0], start_s=0, end_s=5, caption="a chef chops onions in a kitchen"),
        Segment(index=1, clips=[1], start_s=5, end_s=9, caption="a car drives on a highway at night"),
        Segment(index=2, clips=[2], start_s=9, end_s=14, caption="the chef chops onions and carrots in the kitchen"),
    ])
    cross = retrieve_units("v", merge, None, CrossSceneSettings(theme_threshold=0.5))
    multi = [u for u in cross.units if u.kind == "cross"]
    assert [(u.segments, u.link) for u in multi] == [([0, 2], "theme")]
    none = retrieve_units("v", merge, None, CrossSceneSettings(theme_threshold=None))
    assert [u.kind for u in none.units] == ["single"] * 3
