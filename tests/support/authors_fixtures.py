"""Typed access to the parity fixtures made from the authors' released scripts (tests/fixtures/authors/).

Rule: the files are data recorded from real runs of eval.py, infer_qwen25vl.py and infer_internvl.py
(commit 547fe24; see the README there); this module only reads them and undoes the two lossless space
savings of the stored form: a judge request body repeated verbatim is stored once (``body_as_seq``), and in
InternVL texts the 128 frame lines ``Frame1: <image>\\n`` ... ``Frame128: <image>\\n`` are written
``<<FRAMES:128>>``, a history that extends an earlier turn's is stored as that turn's row plus the pairs
added, and ``num_patches_list`` is run-length coded. Values are the authors' (0-1 scale), never recomputed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from tests.support.replay_server import ReplayScript, prompt_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "authors"
Case = Literal["sample", "edge"]
CASES: tuple[Case, ...] = ("sample", "edge")
PLACEHOLDER = "No need for this ability to answer."
FRAMES_TOKEN = "<<FRAMES:128>>"
FRAME_LINES = "".join(f"Frame{i + 1}: <image>\n" for i in range(128))


def expand_frames(text: str) -> str:
    """The stored InternVL text with its 128 frame lines put back."""
    return text.replace(FRAMES_TOKEN, FRAME_LINES)


@dataclass(frozen=True)
class RunValue:
    run_id: int
    acc: float


@dataclass(frozen=True)
class TurnValue:
    """A judged turn eval.py kept: its ``ACC`` and the runs that parsed (``ALL_RUNS``)."""

    video: str
    event_index: str
    round: int
    label: str
    digest: str  # sha256 of the judge prompt: the key in judge_script.json
    acc: float
    runs: tuple[RunValue, ...]
    skipped_runs: tuple[int, ...]  # runs whose attempts never parsed
    attempts: int  # eval.py's create() calls for this turn
    requests: int  # HTTP requests (the openai client's own retries included)


@dataclass(frozen=True)
class DroppedTurn:
    """A turn that was asked but whose runs all failed: absent from eval.py's results."""

    video: str
    event_index: str
    round: int
    label: str
    digest: str
    attempts: int
    requests: int


@dataclass(frozen=True)
class UnaskedEntry:
    """A checklist entry eval.py never asked the judge about, and why."""

    video: str
    event_index: str
    round_index: int | str  # as written in the checklist file
    entry: int  # position in the dialogue's checklist list
    reason: str


@dataclass(frozen=True)
class DialogueValue:
    """``round(sum of ACC / number of turns with ACC, 2)``; ``value`` None when no turn has an ACC."""

    video: str
    event_index: str
    value: float | None
    turns: int


@dataclass(frozen=True)
class TaskExpected:
    task: str
    mean_mtqa: float  # eval.py's <task>_summary.json
    dialogues: tuple[DialogueValue, ...]
    turns: tuple[TurnValue, ...]
    dropped_turns: tuple[DroppedTurn, ...]
    unasked: tuple[UnaskedEntry, ...]
    counts: dict[str, int]

    def turn(self, video: str, event_index: str, round_: int) -> TurnValue:
        found = [t for t in self.turns if (t.video, t.event_index, t.round) == (video, event_index, round_)]
        assert len(found) == 1, (video, event_index, round_)
        return found[0]


@dataclass(frozen=True)
class JudgeRequest:
    """One HTTP request eval.py's client sent, and what the replay judge answered."""

    seq: int
    label: str
    digest: str
    n: int  # how often this prompt had been received, this request included
    status: int
    reply: str | None
    eval_call: int  # which eval.py attempt (create() call) it belongs to
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        return prompt_text(self.body)


@dataclass(frozen=True)
class QwenTurn:
    """One round of infer_qwen25vl.py, in file order: a model turn (its message) or a placeholder."""

    task: str
    video: str
    event_index: int | str  # as in the mtqa file
    round_key: str
    position: int  # index in the answers list
    ability: str
    kind: Literal["model", "placeholder"]
    answer: str  # what the script wrote
    messages: list[dict[str, Any]] | None  # the batch_messages entry; the video path starts with {temp_dir}
    batch: int | None
    frame_size: tuple[int, int] | None  # (width, height) of each frame of the script's MP4
    raised: str | None

    @property
    def prompt(self) -> str:
        assert self.messages is not None
        return str(self.messages[0]["content"][0]["text"])


@dataclass(frozen=True)
class InternVLTurn:
    """One round of infer_internvl.py, in file order, with what a model turn passed to ``model.chat``."""

    task: str
    video: str
    event_index: int | str
    round_key: str
    position: int
    ability: str
    kind: Literal["model", "placeholder"]
    answer: str
    question: str | None  # frame lines + prompt, expanded
    history: tuple[tuple[str, str], ...] | None  # (user, assistant) pairs, expanded
    num_patches_list: tuple[int, ...] | None
    pixel_values_shape: tuple[int, ...] | None
    video_file: str | None
    raised: str | None


@dataclass(frozen=True)
class AuthorsCase:
    name: Case
    root: Path
    answers: dict[str, dict[str, dict[str, list[str]]]]  # task -> video -> event_index -> answer per round
    script: ReplayScript
    requests: tuple[JudgeRequest, ...]
    eval_results: dict[str, dict[str, Any]]  # task -> eval.py's result file
    summaries: dict[str, dict[str, Any]]  # task -> eval.py's <task>_summary.json
    tasks: dict[str, TaskExpected]
    mean_of_task_means: float
    expected_raw: dict[str, Any]
    meta: dict[str, Any]  # inference/meta.json

    def dataset_json(self) -> dict[str, bytes]:
        """``mtqa/<task>.json`` and ``checklist/<task>_CheckList.json`` -> bytes (the edge files, or the
        bundled sample's), for writing a dataset folder."""
        if self.name == "sample":
            from mtvbench.data.sample import package_json

            return package_json()
        return {f"{sub}/{p.name}": p.read_bytes() for sub in ("mtqa", "checklist")
                for p in sorted((self.root / sub).glob("*.json"))}

    def edge_videos(self) -> dict[str, str]:
        """Edge video name -> the bundled sample video it stands for (edge only)."""
        return json.loads((self.root / "videos.json").read_text()) if self.name == "edge" else {}


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _requests(rows: list[dict[str, Any]]) -> tuple[JudgeRequest, ...]:
    bodies: dict[int, dict[str, Any]] = {}
    out = []
    for r in rows:
        body = r["body"] if "body" in r else bodies[r["body_as_seq"]]
        bodies[r["seq"]] = body
        out.append(JudgeRequest(r["seq"], r["label"], r["digest"], r["n"], r["status"], r["reply"], r["eval_call"],
                                body))
    return tuple(out)


def _task(task: str, obj: dict[str, Any]) -> TaskExpected:
    turns = tuple(TurnValue(t["video"], t["event_index"], t["round"], t["label"], t["digest"], t["acc"],
                            tuple(RunValue(r["run_id"], r["acc"]) for r in t["runs"]), tuple(t["skipped_runs"]),
                            t["attempts"], t["requests"]) for t in obj["turns"])
    return TaskExpected(
        task, obj["mean_mtqa"], tuple(DialogueValue(**d) for d in obj["dialogues"]), turns,
        tuple(DroppedTurn(**d) for d in obj["dropped_turns"]),
        tuple(UnaskedEntry(**u) for u in obj["unasked_checklist_entries"]), dict(obj["counts"]))


@cache
def load_case(name: Case) -> AuthorsCase:
    root = FIXTURES / name
    expected = _json(root / "expected.json")
    tasks = sorted(expected["tasks"])
    return AuthorsCase(
        name, root, {t: _json(root / "answers" / f"{t}.json") for t in tasks},
        ReplayScript.from_json(_json(root / "judge_script.json")), _requests(_jsonl(root / "requests.jsonl")),
        {t: _json(root / "eval_results" / f"{t}.json") for t in tasks},
        {t: _json(root / "eval_results" / f"{t}_summary.json") for t in tasks},
        {t: _task(t, expected["tasks"][t]) for t in tasks}, expected["mean_of_task_means"], expected,
        _json(root / "inference" / "meta.json"))


def _common(r: dict[str, Any]) -> dict[str, Any]:
    keys = ("task", "video", "event_index", "round_key", "position", "ability", "kind", "answer")
    return {k: r[k] for k in keys}


@cache
def load_qwen(name: Case) -> tuple[QwenTurn, ...]:
    out = []
    for r in _jsonl(FIXTURES / name / "inference" / "qwen.jsonl"):
        size = tuple(r["frame_size"]) if "frame_size" in r else None
        out.append(QwenTurn(**_common(r), messages=r.get("messages"), batch=r.get("batch"),
                            frame_size=size, raised=r.get("raised")))  # type: ignore[arg-type]
    return tuple(out)


def _run_length(pairs: list[list[int]]) -> tuple[int, ...]:
    return tuple(v for v, n in pairs for _ in range(n))


@cache
def load_internvl(name: Case) -> tuple[InternVLTurn, ...]:
    rows = _jsonl(FIXTURES / name / "inference" / "internvl.jsonl")
    histories: dict[int, list[tuple[str, str]]] = {}
    out = []
    for i, r in enumerate(rows):
        if r["kind"] != "model":
            out.append(InternVLTurn(**_common(r), question=None, history=None, num_patches_list=None,
                                    pixel_values_shape=None, video_file=None, raised=None))
            continue
        if "history_from_row" in r:
            hist = histories[r["history_from_row"]] + [(q, a) for q, a in r["history_added"]]
        else:
            hist = [(q, a) for q, a in r["history"]]
        histories[i] = hist
        out.append(InternVLTurn(
            **_common(r), question=expand_frames(r["question"]),
            history=tuple((expand_frames(q), a) for q, a in hist),
            num_patches_list=_run_length(r["num_patches_list"]), pixel_values_shape=tuple(r["pixel_values"]["shape"]),
            video_file=r["video_file"], raised=r.get("raised")))
    return tuple(out)


Mix = Literal["realistic", "unreadable"]
MIXES: tuple[Mix, ...] = ("realistic", "unreadable")


@dataclass(frozen=True)
class MixRun:
    """eval.py's run of the ``mix`` dataset against one judge script: its own result files, and the requests."""

    script: ReplayScript
    eval_results: dict[str, dict[str, Any]]  # task -> eval.py's result file
    summaries: dict[str, dict[str, Any]]  # task -> <task>_summary.json
    requests: tuple[tuple[str, int], ...]  # (prompt digest, n) in arrival order


@dataclass(frozen=True)
class MixCase:
    """The ``mix`` dataset (tests/fixtures/authors/mix): every case eval.py treats specially, judged by eval.py
    under two reply mixes (a realistic one, and one with 65% of replies it cannot read)."""

    root: Path
    answers: dict[str, dict[str, dict[str, list[str]]]]
    runs: dict[Mix, MixRun]

    def dataset_json(self) -> dict[str, bytes]:
        return {f"{sub}/{p.name}": p.read_bytes() for sub in ("mtqa", "checklist")
                for p in sorted((self.root / sub).glob("*.json"))}

    def videos(self) -> dict[str, str]:
        return json.loads((self.root / "videos.json").read_text())


@cache
def load_mix() -> MixCase:
    root = FIXTURES / "mix"
    stems = sorted(p.stem for p in (root / "answers").glob("*.json"))
    runs = {}
    for mix in MIXES:
        d = root / mix
        runs[mix] = MixRun(ReplayScript.from_json(_json(d / "judge_script.json")),
                           {t: _json(d / "eval_results" / f"{t}.json") for t in stems},
                           {t: _json(d / "eval_results" / f"{t}_summary.json") for t in stems},
                           tuple((r["digest"], r["n"]) for r in _jsonl(d / "requests.jsonl")))
    return MixCase(root, {t: _json(root / "answers" / f"{t}.json") for t in stems}, runs)
