"""The bundled sample benchmark: layout, task rules, checklists, videos, materialize()."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mtvbench.data.layout import NOT_A_BENCHMARK_KEY
from mtvbench.data.sample import NOT_A_BENCHMARK, SAMPLE_VIDEOS, STEMS, materialize, render_frame
from mtvbench.data.sample.videos import VideoSpec
from mtvbench.data.schema import ALL_ROUNDS_TASKS, MODEL_TURN_ABILITIES, STEM_TO_TASK, Task, is_model_turn
from mtvbench.judge.offline import judge_items

av = pytest.importorskip("av")
#: this module tests the encoding of the sample's videos: tests/conftest.py lets it encode them itself
REAL_SAMPLE_VIDEOS = True

REFUSAL = "I'm sorry, but I can't help with that based on this video."
OWN_LABEL = {
    "object_reference": "Object Reference",
    "memory_recall": "Memory Recall",
    "summary": "Summary",
    "answer_refusal": "Answer Refusal",
}
ITEM_KEYS = {"round index"} | {f"Q{i}" for i in range(1, 6)} | {f"A{i}" for i in range(1, 6)}
README = Path(__file__).resolve().parents[2] / "src/mtvbench/data/sample/README.md"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("sample") / "mtvb"
    assert materialize(dest) == dest
    return dest


def _load(root: Path) -> dict[str, tuple[dict, dict]]:
    out = {}
    for stem in STEMS:
        mtqa = json.loads((root / "mtqa" / f"{stem}.json").read_text())
        checklist = json.loads((root / "checklist" / f"{stem}_CheckList.json").read_text())
        out[stem] = (mtqa, checklist)
    return out


def _dialogues(root: Path):
    """(stem, video, event key, rounds dict, checklist entries) for every dialogue."""
    for stem, (mtqa, checklist) in _load(root).items():
        for video, entries in mtqa.items():
            for entry in entries:
                ev = str(entry["event_index"])
                yield stem, video, ev, entry["mtqa"], checklist.get(video, {}).get(ev, [])


def _mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- materialize


def test_materialize_writes_layout(root: Path) -> None:
    files = set(_mtimes(root))
    for stem in STEMS:
        assert f"mtqa/{stem}.json" in files
        assert f"checklist/{stem}_CheckList.json" in files
    for name in SAMPLE_VIDEOS:
        assert f"videos/{name}.mp4" in files
        assert f"videos/.spec-{name}.sha" in files
    assert not [f for f in files if f.endswith(".tmp") or ".tmp." in f]


def test_materialize_twice_does_not_regenerate(root: Path) -> None:
    before = _mtimes(root)
    assert materialize(root) == root
    assert _mtimes(root) == before


def test_stale_spec_regenerates_only_that_video(root: Path) -> None:
    name = next(iter(SAMPLE_VIDEOS))
    (root / "videos" / f".spec-{name}.sha").write_text("stale\n")
    before = _mtimes(root)
    materialize(root)
    after = _mtimes(root)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == {f"videos/{name}.mp4", f"videos/.spec-{name}.sha"}
    assert (root / "videos" / f".spec-{name}.sha").read_text().strip() == SAMPLE_VIDEOS[name].fingerprint()


# ----------------------------------------------------------------------------- videos


def test_specs_are_well_formed() -> None:
    assert 3 <= len(SAMPLE_VIDEOS) <= 4
    for name, spec in SAMPLE_VIDEOS.items():
        assert spec.name == name
        assert 20 <= spec.duration <= 45
        assert 10 <= spec.fps <= 15
        assert len(spec.scenes) >= 3
        assert len({s.background for s in spec.scenes}) >= 3, f"{name}: scenes should look different"


def test_fingerprint_tracks_the_spec() -> None:
    spec = SAMPLE_VIDEOS["shapes_parade"]
    assert spec.fingerprint() == VideoSpec.model_validate_json(spec.model_dump_json()).fingerprint()
    assert spec.model_copy(update={"fps": spec.fps + 1}).fingerprint() != spec.fingerprint()


def test_render_is_deterministic() -> None:
    for spec in SAMPLE_VIDEOS.values():
        i = spec.n_frames // 3
        assert np.array_equal(render_frame(spec, i), render_frame(spec, i))


def test_videos_have_declared_duration_and_frame_count(root: Path) -> None:
    for name, spec in SAMPLE_VIDEOS.items():
        with av.open(str(root / "videos" / f"{name}.mp4")) as c:
            s = c.streams.video[0]
            assert (s.codec_context.width, s.codec_context.height) == (spec.width, spec.height)
            assert s.codec_context.name == "h264"
            assert s.average_rate == spec.fps
            assert s.frames == spec.n_frames
            assert float(s.duration * s.time_base) == pytest.approx(spec.duration, abs=1 / spec.fps)
            decoded = sum(1 for _ in c.decode(s))
        assert decoded == spec.n_frames


def _decode_all(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_scenes_are_at_their_declared_times(root: Path) -> None:
    """Decoded frames match the renderer at scene midpoints, and every cut is a hard cut."""
    for name, spec in SAMPLE_VIDEOS.items():
        frames = _decode_all(root / "videos" / f"{name}.mp4")
        for sc in spec.scenes:
            mid = int((sc.start + sc.end) / 2 * spec.fps)
            err = np.abs(frames[mid].astype(int) - render_frame(spec, mid).astype(int)).mean()
            assert err < 6, f"{name} {sc.title}: decoded frame differs from spec ({err:.1f})"
        for sc in spec.scenes[1:]:
            cut = int(sc.start * spec.fps)
            jump = np.abs(frames[cut].astype(int) - frames[cut - 1].astype(int)).mean()
            assert jump > 15, f"{name}: no hard cut at {sc.start}s ({jump:.1f})"


# ----------------------------------------------------------------------------- JSON layout


def test_json_follows_the_official_layout(root: Path) -> None:
    event_types: set[type] = set()
    for stem, (mtqa, checklist) in _load(root).items():
        assert stem in STEM_TO_TASK
        assert isinstance(mtqa, dict) and mtqa
        for video, entries in mtqa.items():
            assert video in SAMPLE_VIDEOS
            assert isinstance(entries, list) and entries
            events = [str(e["event_index"]) for e in entries]
            assert len(set(events)) == len(events)
            for e in entries:
                # eval.py reads event_index and mtqa; the mark of data that is not a benchmark is ignored by it
                assert set(e) == {"event_index", "mtqa", NOT_A_BENCHMARK_KEY}
                assert e[NOT_A_BENCHMARK_KEY] == NOT_A_BENCHMARK
                event_types.add(type(e["event_index"]))
                rounds = e["mtqa"]
                assert list(rounds) == [f"Round {k}" for k in range(1, len(rounds) + 1)]
                for r in rounds.values():
                    assert set(r) == {"User", "Assistant", "Ability"}
                    assert all(isinstance(v, str) and v.strip() for v in r.values())
        # every checklist dialogue exists in mtqa
        for video, by_event in checklist.items():
            events = {str(e["event_index"]) for e in mtqa[video]}
            assert set(by_event) <= events
            assert all(isinstance(v, list) for v in by_event.values())
    assert event_types == {int, str}, "the sample should carry both int and string event_index values"


def test_dialogue_counts_and_round_counts(root: Path) -> None:
    per_task: dict[str, int] = {}
    for stem, _video, _ev, rounds, _cl in _dialogues(root):
        per_task[stem] = per_task.get(stem, 0) + 1
        assert 5 <= len(rounds) <= 8
    assert all(per_task.get(s, 0) >= 2 for s in STEMS)
    assert sum(per_task.values()) >= 12


def test_checklists(root: Path) -> None:
    unscored_model_turns = 0
    key_orders = set()
    for stem, video, ev, rounds, entries in _dialogues(root):
        task = STEM_TO_TASK[stem]
        model_turns = {int(k.split()[1]) for k, r in rounds.items() if is_model_turn(task, r["Ability"])}
        indices = []
        for entry in entries:
            assert set(entry) == ITEM_KEYS
            key_orders.add(tuple(entry))
            ri = entry["round index"]
            assert isinstance(ri, int)
            assert ri in model_turns, f"{stem}/{video}/{ev}: checklist for non-model round {ri}"
            answers = [entry[f"A{i}"] for i in range(1, 6)]
            assert sorted(answers) == ["No", "Yes", "Yes", "Yes", "Yes"]
            assert all(entry[f"Q{i}"].startswith(("Does ", "Is ", "Did ")) for i in range(1, 6))
            indices.append(ri)
        assert len(set(indices)) == len(indices)
        assert indices, f"{stem}/{video}/{ev} has no scored turn"
        if task in ALL_ROUNDS_TASKS:
            assert len(indices) >= 3
        unscored_model_turns += len(model_turns - set(indices))
    assert unscored_model_turns >= 1, "exercise the 'unscored model turn' rule"
    assert len(key_orders) >= 3, "vary the key order like the release does"


def test_task_rules(root: Path) -> None:
    for stem, video, ev, rounds, _ in _dialogues(root):
        task = STEM_TO_TASK[stem]
        where = f"{stem}/{video}/{ev}"
        labels = [r["Ability"] for r in rounds.values()]
        users = [r["User"] for r in rounds.values()]
        answers = [r["Assistant"] for r in rounds.values()]
        if task in ALL_ROUNDS_TASKS:
            continue
        own = OWN_LABEL[stem]
        assert own in labels, where
        # evaluated rounds carry only their task's label; context rounds carry basic abilities
        assert set(labels) & MODEL_TURN_ABILITIES == {own}, where
        assert labels[0] != own, f"{where}: round 1 is context"
        if task == Task.CONTENT_SUMMARY:
            assert labels[-1] == "Summary" and labels.count("Summary") == 1, where
        if task == Task.MEMORY_RECALL:
            for u, lab in zip(users, labels, strict=True):
                if lab == own:
                    assert not re.search(r"\bround\s*\d", u, re.IGNORECASE), f"{where}: names a round"
        if task == Task.OBJECT_REFERENCE:
            for a, lab in zip(answers, labels, strict=True):
                if lab == own:
                    assert re.search(r"\((?:the )?[^)]+\)", a), f"{where}: referent not in parentheses"


def test_topic_shifting_and_proactive_shape(root: Path) -> None:
    for stem, video, ev, rounds, _ in _dialogues(root):
        users = [r["User"] for r in rounds.values()]
        if stem == "topic_shifting":
            video_rounds = sum("video" in u.lower() or "clip" in u.lower() for u in users)
            assert video_rounds >= 2 and len(users) - video_rounds >= 2, f"{video}/{ev}"
        if stem == "proactive_interaction":
            assert all(r["Assistant"].rstrip().endswith("?") for r in rounds.values()), f"{video}/{ev}"


# ----------------------------------------------------------------------------- offline judge


def _turn_scores(root: Path, answer_for) -> list[float]:
    scores = []
    for _stem, _video, _ev, rounds, entries in _dialogues(root):
        for entry in entries:
            golden = rounds[f"Round {entry['round index']}"]["Assistant"]
            questions = [entry[f"Q{i}"] for i in range(1, 6)]
            expected = [entry[f"A{i}"] == "Yes" for i in range(1, 6)]
            verdicts = judge_items(answer_for(golden), questions)
            scores.append(sum(v == e for v, e in zip(verdicts, expected, strict=True)) / 5)
    return scores


def test_offline_judge_separates_golden_from_refusal(root: Path) -> None:
    golden = _turn_scores(root, lambda g: g)
    refusal = _turn_scores(root, lambda g: REFUSAL)
    g, r = sum(golden) / len(golden), sum(refusal) / len(refusal)
    assert g >= 0.9
    assert r <= 0.5 and g - r >= 0.4


# ----------------------------------------------------------------------------- README


def test_readme_describes_every_scene() -> None:
    text = README.read_text()

    def hms(t: float) -> str:
        t = int(t)
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"

    for name, spec in SAMPLE_VIDEOS.items():
        assert f"`{name}`" in text
        for sc in spec.scenes:
            assert f"{hms(sc.start)}-{hms(sc.end)}" in text, f"{name}: {sc.title}"


def test_the_sample_is_marked_not_a_benchmark(root: Path) -> None:
    """The sample is synthetic: the loader, `validate` and every number made from it say so."""
    from mtvbench.data.official import load_official

    bench, problems = load_official(root)
    assert bench is not None and bench.not_a_benchmark is not None
    assert bench.not_a_benchmark.reason == NOT_A_BENCHMARK and bench.not_a_benchmark.found_in.startswith("mtqa/")
    assert [p.message for p in problems if p.level == "warning"] == [f"NOT a real benchmark: {NOT_A_BENCHMARK}"]


@pytest.fixture(scope="module")
def one_sample(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the module's sample (its videos take seconds to draw, and ``root`` already has them); tests edit
    copies of this one."""
    return Path(shutil.copytree(root, tmp_path_factory.mktemp("one-sample") / "s"))


@pytest.mark.parametrize("reason", ["x" * 100_000, "line one\nline two\x1b[31m red\x07", "   \t "])
def test_a_mark_from_the_data_is_one_bounded_line_or_none(one_sample: Path, tmp_path: Path, reason: str) -> None:
    """The mark's reason is untrusted text from the dataset: kept as one line of at most 500 characters, without
    control characters; a blank one is no mark."""
    import shutil

    from mtvbench.data.official import load_official
    from mtvbench.data.schema import MAX_MARK_CHARS

    root = Path(shutil.copytree(one_sample, tmp_path / "s"))
    for f in (root / "mtqa").glob("*.json"):
        obj = json.loads(f.read_text())
        for recs in obj.values():
            for r in recs:
                r[NOT_A_BENCHMARK_KEY] = reason
        f.write_text(json.dumps(obj))
    bench, _ = load_official(root, check_videos=False)
    assert bench is not None
    if not reason.strip():
        assert bench.not_a_benchmark is None
        return
    mark = bench.not_a_benchmark
    assert mark is not None and len(mark.reason) <= MAX_MARK_CHARS and mark.reason.isprintable()
    assert "\n" not in mark.line and "\x1b" not in mark.line
