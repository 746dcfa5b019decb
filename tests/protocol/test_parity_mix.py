"""Parity on the ``mix`` dataset (tests/fixtures/authors/mix, issue 27): 24 dialogues of 8-10 rounds over 5 videos
(a name with a space and parentheses among them) holding every case the authors' eval.py treats specially (a
round with the entries ``2`` and ``"2"``, ``"3"`` then ``3``, a text-only ``round index``, checklists on context
rounds, ``"Memory Recall "``, rounds out of file order, checklist keys out of order), judged by a scripted judge
under two reply mixes: a realistic one and one where 65% of replies cannot be read by eval.py (JSON in prose,
behind U+00A0 without a fence, a fence padded with U+001C, empty and null content, ``null``, cut JSON). eval.py
ran unchanged on the same script; its result files are the fixtures. ``mtvbench run`` (default protocol) must
ask the judge the same prompts the same number of times and give the same value for every judge run, every turn
and every task.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mtvbench.data.schema import STEM_TO_TASK
from mtvbench.run.rundir import RunDirectory
from tests.protocol.test_parity import PREFIX, sample_videos  # noqa: F401 (the module fixture)
from tests.support.authors_fixtures import MIXES, Mix, load_mix
from tests.support.replay_server import ReplayServer
from tests.support.run_helpers import cli


def mix_dataset(dest: Path, videos: Path) -> Path:
    case = load_mix()
    for rel, data in case.dataset_json().items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    (dest / "videos").mkdir()
    for name, source in case.videos().items():
        os.link(videos / f"{source}.mp4", dest / "videos" / f"{name}.mp4")
    return dest


def run_mix(mix: Mix, tmp_path: Path, videos: Path) -> tuple[Path, ReplayServer, object]:
    data = mix_dataset(tmp_path / "data", videos)
    with ReplayServer(load_mix().runs[mix].script) as srv:
        res = cli("run", "--data", data, "--model", f"{PREFIX}:mix", "--judge", "openai:gemini-2.5-flash",
                  "--judge-base-url", srv.url, "--judge-runs", "3", "--judge-concurrency", "1", "--quiet",
                  "--judge-option", "retry_base_s=0.001", "--judge-option", "breaker_threshold=100000",
                  "--out", tmp_path / "run")
    return tmp_path / "run", srv, res


@pytest.mark.parametrize("mix", MIXES)
def test_mix_scores_equal_eval_py(mix: Mix, tmp_path: Path, sample_videos: Path) -> None:  # noqa: F811
    recorded = load_mix().runs[mix]
    run_dir, srv, res = run_mix(mix, tmp_path, sample_videos)
    assert res.exit_code in (0, 3), res.output  # type: ignore[attr-defined]
    # the same prompts, each asked as often as eval.py asked it (empty and null content are asks, not retries)
    asked: dict[str, int] = {}
    for digest, _ in recorded.requests:
        asked[digest] = asked.get(digest, 0) + 1
    got: dict[str, int] = {}
    for r in srv.requests:
        got[r.digest] = got.get(r.digest, 0) + 1
    assert got == asked
    run = RunDirectory.open(run_dir).load(bootstrap=0, details=True)
    by_id = {t.turn_id: t for ds in run.dscores for t in ds.turns}
    kept = 0
    for stem, results in recorded.eval_results.items():
        task = STEM_TO_TASK[stem].value
        for video, events in results.items():
            for event, rounds in events.items():
                for key, value in rounds.items():
                    turn = by_id[f"{task}/{video}/{event}#{key.removeprefix('Round ')}"]
                    assert turn.score == value["ACC"], (task, video, event, key)
                    assert turn.per_run == {r["run_id"] - 1: r["acc"] for r in value["ALL_RUNS"]}, (video, key)
                    kept += 1
        assert run.scores.tasks[task] == pytest.approx(100 * recorded.summaries[stem]["mean_mtqa"], abs=1e-9), stem
    # a turn eval.py dropped (every run unread) has no score here either (counted instead)
    assert sum(1 for t in by_id.values() if t.score is not None) == kept
    assert run.scores.counts.unscored_turns == len(by_id) - kept
    effects = run.scores.protocol_effects or {}
    for kind in ("verdict_not_yes_no", "reply_keys", "keys_out_of_order", "placeholder_judged", "answer_by_position",
                 "checklist_by_raw_index", "rounding"):
        assert effects[kind] > 0, (kind, effects)
    assert run.scores.paper_reading is not None and run.scores.paper_reading.overall is not None
    if mix == "realistic":  # shown by score, report.html and compare, recomputed from the store
        line = f"protocol effects: verdict_not_yes_no {effects['verdict_not_yes_no']}, "
        score = cli("score", run_dir)
        assert score.exit_code == 3 and line in " ".join(score.output.split())  # type: ignore[attr-defined]
        assert "these replies read by the paper's parser: Overall" in " ".join(score.output.split())  # type: ignore[attr-defined]
        assert cli("report", run_dir, "--out", tmp_path / "rep", "--thumbnails", "0").exit_code == 0  # type: ignore[attr-defined]
        assert line.removeprefix("protocol effects: ") in (tmp_path / "rep" / "report.html").read_text()
        cmp = cli("compare", run_dir, run_dir, "--format", "plain")
        assert f"run A (authors): {line}" in " ".join(cmp.output.split())  # type: ignore[attr-defined]


def test_mix_recorded_data_covers_every_reply_shape() -> None:
    """The recorded scripts hold every reply shape the issue names (so the parity above covers them)."""
    for mix in MIXES:
        replies = [e for p in load_mix().runs[mix].script.prompts.values() for e in p.replies.values()]
        texts = [e for e in replies if isinstance(e, str)]
        assert any(isinstance(e, dict) and e.get("content", 1) is None for e in replies)  # null content
        assert "" in texts and "null" in texts and "{}" in texts
        assert any(t.startswith("\u00a0{") for t in texts)  # JSON behind a no-break space, no fence
        assert any("\x1c" in t for t in texts)  # a fence padded with U+001C (regex's \s does not match it)
        assert any('"A1": true' in t or '"A1": false' in t for t in texts)
        assert any("Yes/No" in t for t in texts)
        assert any(json.dumps("Yes.") in t for t in texts)
