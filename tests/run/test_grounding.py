"""``run --sampling clip`` and ``--frame-timestamps on`` end to end: a loopback OpenAI-compatible server receives
every turn, and the frames it got are read back from the times the generated video's frames show."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from mtvbench.errors import ConfigError
from mtvbench.run.evaluate import evaluate
from mtvbench.run.settings import build_config
from tests.support.datasets import checklist_entry
from tests.support.openai_server import LoopbackServer
from tests.support.run_helpers import cfg_for, cli, model_requests
from tests.support.timed_videos import read_time, write_timed_video

FRAMES = 16
#: dialogues over one 60-second video: (rounds (user, golden assistant), the ranges named so far at each round)
DIALOGUES: list[tuple[list[tuple[str, str]], list[list[tuple[float, float]]]]] = [
    ([("In the video clip from 00:00:10 to 00:00:20, what shape appears?", "A square."),
      ("What happens at 00:00:40?", "It turns."),
      ("And what colour is it?", "Red.")],
     [[(10, 20)], [(10, 20), (35, 45)], [(10, 20), (35, 45)]]),
    ([("Between 0:30 and 0:35, who enters?", "A man; he leaves at 00:00:58."),
      ("Describe 05:00 to 06:00 and 00:00:50 - 00:01:30.", "Nothing after the end."),
      ("Anything else?", "No.")],  # a golden answer names a time; ranges past the end are cut or dropped
     [[(30, 35)], [(30, 35), (50, 60)], [(30, 35), (50, 60)]]),
    ([("What is on the table?", "A cup."),
      ("The meeting starts at 8:15 pm; what is the man doing?", "Sitting."),
      ("Summarise the video.", "A man sits.")],  # no range at all (a clock time is not one)
     [[], [], []]),
    ([("During 00:00:10–00:00:30, what moves?", "A car."),
      ("And during 0:20 ~ 0:40?", "The same car."),
      ("What is at 0:45 of the clip?", "A tree.")],  # overlapping ranges, merged; M:SS forms
     [[(10, 30)], [(10, 40)], [(10, 50)]]),
]


def _dataset(root: Path) -> Path:
    (root / "mtqa").mkdir(parents=True)
    (root / "checklist").mkdir(parents=True)
    events, checks = [], {}
    for j, (rounds, _) in enumerate(DIALOGUES):
        events.append({"event_index": j, "mtqa": {f"Round {k}": {"User": u, "Assistant": a,
                                                                   "Ability": "Object Reference"}
                                                  for k, (u, a) in enumerate(rounds, 1)}})
        checks[str(j)] = [checklist_entry(k, ["the answer names it"], "the answer is blank")
                          for k in range(1, len(rounds) + 1)]
    (root / "mtqa" / "object_reference.json").write_text(json.dumps({"v0": events}))
    (root / "checklist" / "object_reference_CheckList.json").write_text(json.dumps({"v0": checks}))
    write_timed_video(root / "videos" / "v0.mp4", 60)
    return root


def _received(req: dict[str, Any]) -> tuple[list[float], list[str]]:
    """The times the frames of one request show, and the text parts just before each of them."""
    times, labels, last_text = [], [], ""
    for part in req["body"]["messages"][-1]["content"]:
        if part["type"] == "text":
            last_text = part["text"]
        elif part["type"] == "image_url":
            times.append(read_time(base64.b64decode(part["image_url"]["url"].split(",", 1)[1])))
            labels.append(last_text)
            last_text = ""
    return times, labels


def _expected(question: str) -> list[tuple[float, float]]:
    for rounds, ranges in DIALOGUES:
        for (u, _), r in zip(rounds, ranges):
            if question.endswith(u):
                return r
    raise AssertionError(question)


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_clip_sends_each_turn_its_share_inside_the_ranges_named_so_far(tmp_path: Path, share: float) -> None:
    data = _dataset(tmp_path / "data")
    with LoopbackServer() as srv:
        evaluate(cfg_for(data, tmp_path / "run", srv.url, tmp_path / "cache", frames=FRAMES, judge="offline",
                         protocol="paper", tasks="OR", sampling="clip", clip_share=share, judge_runs=1))
    reqs = model_requests(srv.state)
    assert len(reqs) == sum(len(r) for r, _ in DIALOGUES)
    step = 0.1 + 1e-6  # one frame of the 10 fps video
    for req in reqs:
        times, _ = _received(req)
        ranges = _expected(req["text"])
        assert len(times) == FRAMES and times == sorted(set(times))
        inside = sum(any(a - step <= t <= b + step for a, b in ranges) for t in times)
        assert inside >= (round(share * FRAMES) if ranges else 0), (req["text"], times)
        if not ranges:  # no range named: the uniform frames
            assert times == pytest.approx([round(i * 59.9 / (FRAMES - 1), 1) for i in range(FRAMES)], abs=0.051)
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    for row in rows:  # the frames each turn got are recorded, as frame indices and seconds
        assert len(row["inputs"]["frame_indices"]) == FRAMES
        assert row["inputs"]["frame_times"] == pytest.approx([i / 10 for i in row["inputs"]["frame_indices"]])
        ranges = _expected(row["question"])
        inside = sum(any(a - step <= t <= b + step for a, b in ranges) for t in row["inputs"]["frame_times"])
        assert inside >= (round(share * FRAMES) if ranges else 0)
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["ablations"] == [f"--sampling clip (share {share:g})"]


def test_uniform_records_its_frames_and_sends_the_same_frames_every_turn(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "data")
    with LoopbackServer() as srv:
        evaluate(cfg_for(data, tmp_path / "run", srv.url, tmp_path / "cache", frames=FRAMES, judge="offline",
                         protocol="paper", tasks="OR", judge_runs=1))
    sent = {tuple(_received(r)[0]) for r in model_requests(srv.state)}
    assert len(sent) == 1
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert rows and all(r["inputs"]["frame_times"] == pytest.approx(list(next(iter(sent))), abs=0.051) for r in rows)
    assert all(r["inputs"]["frame_indices"] == [round(10 * t) for t in r["inputs"]["frame_times"]] for r in rows)
    assert json.loads((tmp_path / "run" / "scores.json").read_text()).get("ablations", []) == []


@pytest.mark.parametrize("sampling", ["uniform", "clip"])
def test_frame_timestamps_put_each_frames_time_before_it(tmp_path: Path, sampling: str) -> None:
    data = _dataset(tmp_path / "data")
    with LoopbackServer() as srv:
        evaluate(cfg_for(data, tmp_path / "run", srv.url, tmp_path / "cache", frames=FRAMES, judge="offline",
                         protocol="paper", tasks="OR", sampling=sampling, frame_timestamps="on", judge_runs=1))
    for req in model_requests(srv.state):
        times, labels = _received(req)
        assert labels == [f"Frame at 00:00:{int(t + 1e-6):02d}" for t in times]
        assert req["text"].endswith(req["body"]["messages"][-1]["content"][-1]["text"][-20:])  # prompt last


def test_defaults_leave_the_identity_of_existing_runs_unchanged(tmp_path: Path) -> None:
    base = {"data": tmp_path, "model": "oracle", "judge": "offline", "out": tmp_path / "run", "protocol": "paper"}
    plain = build_config(base).identity()
    assert build_config({**base, "sampling": "uniform", "frame_timestamps": "off", "clip_share": 0.3}).identity() \
        == plain
    assert "frame_timestamps" not in plain and plain["frames"] == "n128-m720-q90"
    clip = build_config({**base, "sampling": "clip"}).identity()
    timed = build_config({**base, "frame_timestamps": "on"}).identity()
    assert clip["frames"] != plain["frames"] and timed["frame_timestamps"] == "on"
    assert build_config({**base, "sampling": "clip", "clip_share": 0.25}).identity()["frames"] != clip["frames"]


@pytest.mark.parametrize("flags", [["--sampling", "clip"], ["--frame-timestamps", "on"],
                                   ["--sampling", "clip", "--frame-timestamps", "on"]])
def test_authors_script_frame_rule_refuses_the_ablations_with_one_error(tmp_path: Path, flags: list[str]) -> None:
    res = cli("run", "--data", str(tmp_path), "--model", "qwen3-vl-8b-instruct", "--judge", "offline",
              "--out", str(tmp_path / "run"), "--protocol", "authors", *flags)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "would change what authors: eval/infer_qwen25vl.py sends" in res.output
    assert not (tmp_path / "run").exists()


def test_timestamps_refused_only_where_the_backend_samples_the_video_itself(tmp_path: Path) -> None:
    base = {"data": tmp_path, "judge": "offline", "out": tmp_path / "run", "protocol": "paper",
            "frame_timestamps": "on"}
    for flags in ({}, {"sampling": "clip", "frame_timestamps": "off"}):
        with pytest.raises(ConfigError, match="gemini input=upload sends the video file"):
            build_config({**base, **flags, "model": "gemini:g", "model_settings": {"extra": {"input": "upload"}}})
    for model, extra in [("openai:m", {"video_part": True}), ("gemini:g", {"context_cache": True}),
                         ("hf:m", {}), ("vllm:m", {"input": "video"})]:  # each carries the times its own way
        assert build_config({**base, "model": model, "model_settings": {"extra": extra}}).frame_timestamps == "on"


@pytest.mark.parametrize("timestamps", ["off", "on"])
def test_a_video_part_carries_each_turns_frame_times_as_vllm_media_io_kwargs(tmp_path: Path, timestamps: str) -> None:
    data = _dataset(tmp_path / "data")
    with LoopbackServer() as srv:
        evaluate(cfg_for(data, tmp_path / "run", srv.url, tmp_path / "cache", frames=FRAMES, judge="offline",
                         protocol="paper", tasks="OR", sampling="clip", frame_timestamps=timestamps, judge_runs=1,
                         model_settings={"base_url": srv.url, "timeout_s": 20,
                                         "extra": {"retry_base_s": 0.01, "video_part": True}}))
    reqs = model_requests(srv.state)
    assert len(reqs) == sum(len(r) for r, _ in DIALOGUES)
    recorded = {json.loads(line)["question"]: json.loads(line)["inputs"]
                for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()}
    for req in reqs:
        (video,) = [p for p in req["body"]["messages"][-1]["content"] if p["type"] == "video_url"]
        shown = [read_time(base64.b64decode(j)) for j in video["video_url"]["url"].split(",", 1)[1].split(",")]
        if timestamps == "off":
            assert "media_io_kwargs" not in req["body"]
            continue
        meta = req["body"]["media_io_kwargs"]["video"]
        inputs = next(v for q, v in recorded.items() if req["text"].endswith(q[-40:]))
        assert meta["frames_indices"] == inputs["frame_indices"] and len(shown) == FRAMES
        assert meta["total_num_frames"] == 600 and meta["duration"] == pytest.approx(60)
        # the time vLLM gives frame k (frames_indices[k] / fps) is the time the frame shows
        assert [i / meta["fps"] for i in meta["frames_indices"]] == pytest.approx(shown, abs=0.051)


def test_in_process_image_lists_put_each_frames_time_before_it(tmp_path: Path) -> None:
    from mtvbench.media.frames import FrameSettings, sample_frames
    from mtvbench.models.local import build_messages
    from mtvbench.records import GenerationRequest
    from mtvbench.util.timecodes import frame_label

    frames = sample_frames(write_timed_video(tmp_path / "v.mp4", 20), FrameSettings(num_frames=5, max_side=64))
    for ts in (False, True):
        req = GenerationRequest(id="0", prompt="q", frames=frames, frame_timestamps=ts)
        content = build_messages(req, None, "images")[-1]["content"]
        expected = [{"type": "text", "text": frame_label(t)} for t in frames.timestamps] if ts else []
        assert [p for p in content if p["type"] == "text"][:-1] == expected
        assert [p["type"] for p in content].count("image") == 5 and content[-1]["text"] == "q"
        assert build_messages(req, None, "video")[-1]["content"] == [{"type": "video"}, {"type": "text", "text": "q"}]
