from __future__ import annotations

import numpy as np
import pytest

from mtvbench.analysis.stats import benchmark_stats, compute_stats, mtld, stats_markdown, words
from mtvbench.data.schema import Dialogue, Round, Task
from tests.support.datasets import make_dataset


def test_mtld_hand_computed():
    # forward and backward: a | a a -> factor at token 2 (ttr .5), again at token 4: 4 tokens / 2 factors
    assert mtld(["a", "a", "a", "a"]) == pytest.approx(2.0)
    # "a b a b": ttr 1, 1, 2/3 (<= .72 -> factor 1, reset), then "b": ttr 1 -> partial (1-1)/(.28) = 0
    # forward = 4 / 1 = 4; backward "b a b a" identical by symmetry
    assert mtld(["a", "b", "a", "b"]) == pytest.approx(4.0)
    # "a a b": forward: factor at 2, then "b" partial 0 -> 3/1; backward "b a a": ttr 1, 1, 2/3 -> factor 1 -> 3
    assert mtld(["a", "a", "b"]) == pytest.approx(3.0)
    # "a b c": no factor completes, partial 0 -> undefined
    assert mtld(["a", "b", "c"]) is None
    assert mtld([]) is None


def test_words_lowercases_and_keeps_apostrophes():
    assert words("The man's DOG, 3 cats_x!") == ["the", "man's", "dog", "3", "cats", "x"]


def test_table1_stats_on_generated_dataset(tmp_path):
    data = make_dataset(tmp_path / "d")
    rows = benchmark_stats(data)
    s = rows[0]
    assert (s.dialogues, s.videos, s.qas) == (6, 2, 30)
    assert s.avg_qas_per_video == pytest.approx(15.0) and s.avg_turns == pytest.approx(5.0)
    assert s.model_turns == 6 * 2 + 2 * 3 and s.scored_turns == 12  # TS/PI: all 5 rounds are model turns
    assert s.long is False and s.mean_video_minutes == pytest.approx(3.0 / 60)
    # "Question 3 about the object_reference clip?" -> 7 regex tokens; answers: 14 tokens
    assert s.question_len == pytest.approx(7.0) and s.answer_len == pytest.approx(14.0)
    assert s.tokenizer.startswith("regex") and "MTLD" in s.diversity_measure
    assert s.question_diversity is not None and s.answer_diversity is not None
    assert [r.name for r in rows[1:]] == ["OR", "MR", "CS", "AR", "TS", "PI"]
    md = stats_markdown(rows)
    assert "| 30 | 15.00 | ✗ | 5.00 |" in md and "MTLD" in md


def test_long_flag_uses_mean_video_length():
    d = [Dialogue(task=Task.MEMORY_RECALL, video=v, event="0", rounds=[Round(index=1, user="q?", assistant="a.")])
         for v in ("x", "y")]
    assert compute_stats(d, {"x": 500.0, "y": 800.0}).long is True  # mean 650 s > 600 s
    assert compute_stats(d, {"x": 500.0, "y": 650.0}).long is False
    assert compute_stats(d, {}).long is None


def test_share_of_questions_naming_a_range_and_their_length_relative_to_the_video():
    def dialogue(video: str, *users: str) -> Dialogue:
        return Dialogue(task=Task.OBJECT_REFERENCE, video=video, event="0",
                        rounds=[Round(index=i, user=u, assistant="a.") for i, u in enumerate(users, 1)])

    d = [dialogue("x", "In the video clip from 00:00:10 to 00:00:40, what moves?", "And then?",
                  "What is at 00:01:00?"),
         dialogue("y", "What colour is the car?", "Between 0:30 and 1:30, who talks?", "At 8:15 pm, who?")]
    s = compute_stats(d, {"x": 300.0, "y": 600.0})
    assert s.questions_naming_range == pytest.approx(3 / 6)
    assert s.first_questions_naming_range == pytest.approx(1 / 2)
    # 30 s of 300, 10 s (a point +- 5 s) of 300, 60 s of 600
    assert s.range_length_quartiles == pytest.approx(list(np.quantile([10 / 300, 0.1, 0.1], [0.25, 0.5, 0.75])))
    assert compute_stats(d, {}).range_length_quartiles is None
    assert "named range %" in stats_markdown([s])
