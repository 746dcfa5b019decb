"""Issue 27: the three differences from eval.py fixed under ``authors`` (a checklist entry chosen by its raw
``round index``; the judge's reply read exactly as sent, with the ``regex`` module's ``\\s``; an empty or null
judge content counted as one of the 5 asks), and the protocol effects counted by kind, each count checked by hand.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mtvbench.data.official import load_official
from mtvbench.data.schema import ChecklistItem, Dialogue, NumberedEntry, Round, Task
from mtvbench.models.ask import ReaskPolicy, ask
from mtvbench.models.openai_api import parse_completion
from mtvbench.protocol import JudgeReading, get_protocol
from mtvbench.protocol.authors import WHITESPACE, read_reply
from mtvbench.records import GenerationRequest, GenerationResult, JudgeVerdict
from mtvbench.scoring.aggregate import compute_scores
from mtvbench.scoring.effects import EFFECT_KINDS, PAPER_READING_LABEL, protocol_effects, summary_line

AUTHORS, PAPER = get_protocol("authors"), get_protocol("paper")
EXP = ["Yes", "Yes", "Yes", "No", "Yes"]


def items(tag: str = "") -> list[ChecklistItem]:
    return [ChecklistItem(key=f"Q{i}", question=f"q{i}{tag}?", expected=e) for i, e in enumerate(EXP, 1)]  # type: ignore[arg-type]


def raw(its: list[ChecklistItem]) -> list[tuple[str, str]]:
    return [kv for it in its for kv in ((it.key, it.question), (it.answer_key, it.expected))]


# ---------------------------------------------------------------------------------------------- 1. raw round index

def write_dataset(root: Path, entries: list[dict[str, object]]) -> Path:
    from mtvbench.data.sample import materialize

    rounds = {f"Round {k}": {"User": f"q{k}", "Assistant": f"a{k}", "Ability": "Memory Recall"} for k in (1, 2, 3)}
    (root / "mtqa").mkdir(parents=True)
    (root / "checklist").mkdir()
    (root / "mtqa" / "memory_recall.json").write_text(json.dumps({"v": [{"event_index": 0, "mtqa": rounds}]}))
    (root / "checklist" / "memory_recall_CheckList.json").write_text(json.dumps({"v": {"0": entries}}))
    (root / "videos").mkdir()
    vids = materialize(root.parent / "sample") / "videos"
    (root / "videos" / "v.mp4").write_bytes(next(vids.glob("*.mp4")).read_bytes())
    return root


def entry(index: object, tag: str) -> dict[str, object]:
    out: dict[str, object] = {"round index": index}
    for i, e in enumerate(EXP, 1):
        out |= {f"Q{i}": f"{tag} {i}?", f"A{i}": e}
    return out


@pytest.mark.parametrize(("entries", "authors_tag", "paper_tag"), [
    ([entry(2, "number"), entry("2", "text")], "number", "text"),  # eval.py keys by the raw value: the 2 is found
    ([entry("2", "text"), entry(2, "number")], "number", "number"),
    ([entry(2, "first"), entry(2, "second"), entry("2", "text")], "second", "text"),  # the last number
    ([entry("2", "text"), entry(" 2", "text2")], None, "text2"),  # text never matches
])
def test_a_checklist_entry_is_chosen_by_its_raw_round_index(tmp_path: Path, entries: list[dict[str, object]],
                                                            authors_tag: str | None, paper_tag: str) -> None:
    bench, _ = load_official(write_dataset(tmp_path / "d", entries))
    assert bench is not None
    d = bench.dialogues[0]
    a, p = AUTHORS.apply(d).round(2), PAPER.apply(d).round(2)
    assert p.scored and p.checklist and p.checklist[0].question.startswith(paper_tag + " ")
    if authors_tag is None:
        assert not a.scored and a.not_judged
    else:
        assert a.scored and a.checklist and a.checklist[0].question.startswith(authors_tag + " ")
        assert a.checklist_raw and a.checklist_raw[0][1].startswith(authors_tag + " ")


def test_validate_says_which_entry_each_protocol_judges(tmp_path: Path) -> None:
    from tests.support.run_helpers import cli

    res = cli("validate", write_dataset(tmp_path / "d", [entry(2, "number"), entry("2", "text")]))
    assert "2 checklist entries for round 2: --protocol paper uses the last one; --protocol authors judges the last " \
           "one whose 'round index' is a number" in " ".join(res.output.split())
    assert "as the authors' eval.py does" not in res.output.split("2 checklist entries")[1].split("\n")[0]


# ---------------------------------------------------------------------------------------------- 2. exact reading

BODY = '{"A1": "Yes", "A2": "Yes", "A3": "Yes", "A4": "No", "A5": "Yes"}'


@pytest.mark.parametrize("pad", ["\u00a0", "\u2003", "\u3000", "\x1c", "\x1f", "\u200b", "\ufeff"])
def test_json_behind_a_space_json_does_not_count_is_not_read(pad: str) -> None:
    assert not isinstance(read_reply(pad + BODY), JudgeReading)  # json.loads skips only " \t\n\r"
    assert isinstance(read_reply(" \t\n\r" + BODY + "\n"), JudgeReading)


@pytest.mark.parametrize(("pad", "read"), [
    ("\u00a0", True), ("\u2003", True), ("\u3000", True), ("\x85", True), ("\n", True),  # regex's \s: White_Space
    ("\x1c", False), ("\x1d", False), ("\x1e", False), ("\x1f", False),  # str.isspace, but not regex's \s
])
def test_the_fence_reads_whitespace_as_the_regex_module_does(pad: str, read: bool) -> None:
    assert isinstance(read_reply(f"```json{pad}{BODY}{pad}```"), JudgeReading) is read


def test_the_whitespace_class_is_unicode_white_space() -> None:
    import re

    ours = {c for c in range(0x110000) if re.fullmatch(WHITESPACE, chr(c))}
    python = {c for c in range(0x110000) if chr(c).isspace()}
    assert python - ours == {0x1C, 0x1D, 0x1E, 0x1F} and not ours - python


class Scripted:
    """A backend answering a fixed list of replies (raw content; None: null content), counting its calls."""

    name = "scripted"

    def __init__(self, replies: list[str | None]):
        self.replies, self.calls = list(replies), 0

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        content = self.replies[self.calls]
        self.calls += 1
        body = json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}).encode()
        return parse_completion(body, "test", request.exact_reply)

    async def aclose(self) -> None:
        return None


def test_a_reply_is_read_with_nothing_stripped_and_empty_or_null_is_one_ask() -> None:
    from mtvbench.judge.llm import LLMJudge

    rnd = Round(index=1, user="u", assistant="a", model_turn=True, checklist=items(), checklist_raw=raw(items()))
    backend = Scripted(["\u00a0" + BODY, "", None, "<think>x</think>" + BODY, BODY])
    v = asyncio.run(LLMJudge(backend, protocol=AUTHORS).judge("answer", rnd, 0))  # type: ignore[arg-type]
    assert v.status == "ok" and backend.calls == 5 == v.attempts  # read at the 5th ask: each reply was one ask


def test_null_content_is_retried_by_the_transport_without_exact_reply() -> None:
    from mtvbench.models.resilience import RetryableError

    with pytest.raises(RetryableError):
        parse_completion(json.dumps({"choices": [{"message": {"content": None}, "finish_reason": "stop"}]}).encode(),
                         "u")
    got = parse_completion(json.dumps({"choices": [{"message": {"content": ""}}]}).encode(), "u", exact_reply=True)
    assert got.outcome == "empty" and got.raw_text == ""

    async def once() -> int:
        backend = Scripted(["", "", "", "", ""])
        out = await ask(backend, GenerationRequest(id="j", prompt="p", exact_reply=True),  # type: ignore[arg-type]
                        read_reply, ReaskPolicy(5))
        assert out.status == "failed"
        return backend.calls

    assert asyncio.run(once()) == 5


# ---------------------------------------------------------------------------------------------- effects, by hand

def ok(reply: list[tuple[str, str]], text: str, verdicts: dict[str, str] | None = None) -> JudgeVerdict:
    return JudgeVerdict(run=0, status="ok", reply=reply, raw=[text], verdicts=verdicts or {})  # type: ignore[arg-type]


def as_run(obj: dict[str, object]) -> JudgeVerdict:
    text = json.dumps(obj)
    got = read_reply(text)
    assert isinstance(got, JudgeReading)
    return JudgeVerdict(run=0, status="ok", reply=got.reply, verdicts=got.verdicts, raw=[text])


RIGHT = dict(zip([f"A{i}" for i in range(1, 6)], EXP))


def one_dialogue(*rounds: Round) -> Dialogue:
    return Dialogue(task=Task.MEMORY_RECALL, video="v", event="0", rounds=list(rounds))


def judged(index: int, **kw: object) -> Round:
    its = items(str(index))
    return Round(index=index, user="u", assistant="a", model_turn=True, checklist=its, checklist_raw=raw(its),
                 judged=True, **kw)  # type: ignore[arg-type]


def effects_of(runs: dict[int, JudgeVerdict], *, rounds: tuple[Round, ...] | None = None, protocol: str = "authors"
               ) -> dict[str, int]:
    d = one_dialogue(*(rounds or (judged(1),)))
    responses = {d.turn_id(r.index): {} for r in d.rounds}
    verdicts = {d.turn_id(r.index): runs for r in d.rounds if r.scored}
    return protocol_effects([d], responses, verdicts, protocol).counts


def test_a_clean_judge_gives_all_zeros() -> None:
    counts = effects_of({0: as_run(RIGHT), 1: as_run(RIGHT), 2: as_run(RIGHT)})
    assert counts == dict.fromkeys(EFFECT_KINDS, 0)


@pytest.mark.parametrize(("obj", "kind"), [
    ({**RIGHT, "A1": "Yes."}, "verdict_not_yes_no"),  # eval.py: a mismatch; the paper: Yes
    ({**RIGHT, "A2": True}, "verdict_not_yes_no"),
    ({k: "Yes/No" for k in RIGHT}, "verdict_not_yes_no"),  # the format example echoed: 0 vs unread
    ({**RIGHT, "A6": "Yes"}, "reply_keys"),  # 5/6 vs 1.0
    (dict(list(RIGHT.items())[:4]), "reply_keys"),  # 4 keys: the paper reads none (re-asked)
    ({}, "reply_keys"),
    (dict(reversed(list(RIGHT.items()))), "keys_out_of_order"),
])
def test_each_reply_kind_counts_the_run_it_changes(obj: dict[str, object], kind: str) -> None:
    counts = effects_of({0: as_run(obj), 1: as_run(RIGHT), 2: as_run(RIGHT)})
    assert counts[kind] == 1 and sum(counts.values()) - counts["rounding"] == 1


def test_a_kind_that_changes_no_value_is_not_counted() -> None:
    # "Yes." where No is expected: a mismatch both ways; keys reversed over a symmetric verdict: the same pairs
    wrong = {**RIGHT, "A4": "Yes."}
    sym = {"A5": "Yes", "A4": "Yes", "A3": "Yes", "A2": "Yes", "A1": "Yes"}
    assert effects_of({0: as_run(wrong)})["verdict_not_yes_no"] == 0
    assert effects_of({0: as_run(sym)})["keys_out_of_order"] == 0


def test_a_dropped_run_counts_when_the_paper_reads_one_of_its_replies() -> None:
    prose = f"My verdicts: {json.dumps(RIGHT)}."
    readable = JudgeVerdict(run=1, status="unparsed", raw=["null", prose])
    unreadable = JudgeVerdict(run=2, status="unparsed", raw=["Sure!"] * 5)
    counts = effects_of({0: as_run(RIGHT), 1: readable, 2: unreadable})
    assert counts["run_dropped"] == 1


def test_data_kinds_count_each_scored_round() -> None:
    placeholder = judged(1, placeholder_answer="No need for this ability to answer.")
    moved = judged(2, answer_round=3)
    by_number = judged(3, checklist_by_number=NumberedEntry(checklist=items(), checklist_raw=raw(items())))
    text_only = Round(index=4, user="u", assistant="a", model_turn=True, checklist=items(), checklist_raw=raw(items()),
                      judged=False, not_judged="its 'round index' is given as text, which the authors' eval.py never "
                                               "matches")
    counts = effects_of({0: as_run(RIGHT)}, rounds=(placeholder, moved, by_number, text_only))
    assert counts["placeholder_judged"] == 1 and counts["answer_by_position"] == 1
    assert counts["checklist_by_raw_index"] == 2


def test_rounding_counts_every_value_it_changes() -> None:
    six = {**RIGHT, "A6": "Yes"}  # 5/6 -> 0.83 (1); runs 0.83, 1.0, 0.8 -> mean 0.8766.. -> 0.88 (2)
    wrong = {**RIGHT, "A1": "No"}
    counts = effects_of({0: as_run(six), 1: as_run(RIGHT), 2: as_run(wrong)})
    assert counts["rounding"] == 2
    third = {0: as_run(RIGHT), 1: as_run(RIGHT), 2: as_run(wrong)}  # (1 + 1 + 0.8) / 3 = 0.9333 -> 0.93
    counts = effects_of(third, rounds=(judged(1), judged(2)))
    assert counts["rounding"] == 2  # each turn 0.9333 -> 0.93 (2); the dialogue (0.93 + 0.93) / 2 is exact


def test_paper_counts_the_verdicts_its_reading_repairs() -> None:
    text = json.dumps({**RIGHT, "A1": True, "A2": "Yes."})
    v = JudgeVerdict(run=0, status="ok", verdicts=RIGHT, raw=[text])  # type: ignore[arg-type]
    assert effects_of({0: v}, protocol="paper")["verdict_not_yes_no"] == 1
    v = JudgeVerdict(run=0, status="ok", verdicts=RIGHT, raw=[json.dumps({k: x.lower() for k, x in RIGHT.items()})])  # type: ignore[arg-type]
    assert effects_of({0: v}, protocol="paper")["verdict_not_yes_no"] == 0  # eval.py matches lowercase too


def test_a_true_false_judge_gets_counts_a_note_and_the_paper_parser_figure() -> None:
    from mtvbench.cli.evaluate import status_lines

    d = one_dialogue(judged(1))
    bools = {k: v == "Yes" for k, v in RIGHT.items()}
    runs = {0: as_run(bools), 1: as_run(bools), 2: as_run(bools)}
    scores, _ = compute_scores([d], {d.turn_id(1): {}}, {d.turn_id(1): runs}, model="m", judge="j", judge_runs=3,
                               bootstrap=0, protocol="authors", tasks=[Task.MEMORY_RECALL])
    assert scores.tasks["memory_recall"] == 0.0 and scores.complete  # eval.py's number: every item a mismatch
    assert scores.protocol_effects and scores.protocol_effects["verdict_not_yes_no"] == 3
    assert scores.paper_reading and scores.paper_reading.tasks["memory_recall"] == 100.0
    line = summary_line(scores.protocol_effects, scores.paper_reading)
    assert line == f"protocol effects: verdict_not_yes_no 3; {PAPER_READING_LABEL}: Overall – (MR 100.00)"
    assert line in [text for text, _ in status_lines(scores)]
    assert json.loads(scores.model_dump_json())["schema_version"] == 3
