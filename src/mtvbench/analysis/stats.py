"""Benchmark statistics in the layout of the paper's Table 1.

- ``#QAs``: question-answer pairs = rounds over all dialogues (every round is a QA pair;
  the model-turn and scored-turn counts are given beside it);
- ``Avg. Q/V``: #QAs / number of distinct videos the dialogues use;
- ``Long``: whether the mean video length (probed from the files) exceeds 10 minutes;
- ``#Turns``: mean number of rounds per dialogue;
- ``Q. Div.`` / ``A. Div.``: lexical diversity as **MTLD** (Measure of Textual Lexical
  Diversity, McCarthy & Jarvis 2010; factor threshold 0.72, mean of the forward and the
  backward pass) over the lower-cased word stream of all questions / all golden answers,
  in file order. The paper follows Lee et al. (2025, MultiVerse); we have not verified
  their exact formula, so these numbers are MTLD as defined here and may differ from the
  paper's;
- ``Q. Len.`` / ``A. Len.``: mean tokens per question / answer. The default tokenizer is
  offline: the regex ``\\w+|[^\\w\\s]`` (words and single punctuation marks). The paper
  uses the LLaMA-3.1-8B tokenizer; pass a local Hugging Face tokenizer folder to use it
  (needs ``transformers``; loaded with ``local_files_only``).

Beside Table 1, for ``run --sampling clip``: ``named range``, the share of questions that name a part of
the video (:func:`mtvbench.util.timecodes.named_ranges`: a range or a point), and of first questions; and
the distribution of the part they name relative to the video's length (quartiles over the questions whose
video length is known).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from pydantic import BaseModel

from mtvbench.data.schema import TASKS, Dialogue, NotABenchmark
from mtvbench.errors import MissingExtraError
from mtvbench.render.console import FormatOption, OutputFormat, dataset_path, print_tables
from mtvbench.render.tables import Col, TextTable, Value, to_markdown
from mtvbench.util.files import atomic_write_text
from mtvbench.util.timecodes import named_ranges

MTLD_THRESHOLD = 0.72
DIVERSITY_MEASURE = "MTLD (McCarthy & Jarvis 2010, threshold 0.72, forward/backward mean)"
REGEX_TOKENIZER = r"regex \w+|[^\w\s]"
_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def words(text: str) -> list[str]:
    """Lower-cased words (letters/digits, inner apostrophes kept) used for diversity."""
    return [w.lower() for w in _WORD.findall(text)]


def _mtld_pass(tokens: Sequence[str], threshold: float) -> float | None:
    factors = 0.0
    types: set[str] = set()
    count = 0
    for tok in tokens:
        count += 1
        types.add(tok)
        if len(types) / count <= threshold:
            factors += 1
            types, count = set(), 0
    if count:
        ttr = len(types) / count
        factors += (1.0 - ttr) / (1.0 - threshold)
    return len(tokens) / factors if factors > 0 else None


def mtld(tokens: Sequence[str], threshold: float = MTLD_THRESHOLD) -> float | None:
    """MTLD of a token sequence; ``None`` when undefined (no factor completes, e.g. every
    token distinct)."""
    if not tokens:
        return None
    f = _mtld_pass(tokens, threshold)
    b = _mtld_pass(list(reversed(tokens)), threshold)
    if f is None or b is None:
        return None
    return (f + b) / 2.0


def make_tokenizer(path: str | None = None) -> tuple[str, Callable[[str], int]]:
    """(name, count_tokens). ``path``: a local Hugging Face tokenizer folder or name in the
    local cache; ``None``: the offline regex tokenizer."""
    if not path:
        return REGEX_TOKENIZER, lambda s: len(_TOKEN.findall(s))
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise MissingExtraError("a Hugging Face tokenizer", "hf", "transformers") from e
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return f"hf:{path}", lambda s: len(tok.encode(s, add_special_tokens=False))


class BenchStats(BaseModel):
    name: str
    dialogues: int
    videos: int
    qas: int
    model_turns: int
    scored_turns: int
    avg_qas_per_video: float | None
    mean_video_minutes: float | None
    long: bool | None
    videos_with_duration: int
    avg_turns: float | None
    question_diversity: float | None
    answer_diversity: float | None
    question_len: float | None
    answer_len: float | None
    tokenizer: str
    #: share of the questions (rounds' User text) that name a time range or point of the video
    questions_naming_range: float | None = None
    #: the same share among the dialogues' first questions
    first_questions_naming_range: float | None = None
    #: quartiles (25, 50, 75 %) of the named part's length / the video's length, over the questions naming one
    range_length_quartiles: list[float] | None = None
    diversity_measure: str = DIVERSITY_MEASURE
    #: why the data is not a real benchmark (built with a scripted model, or the bundled sample); None otherwise
    not_a_benchmark: NotABenchmark | None = None


def compute_stats(dialogues: Sequence[Dialogue], durations: dict[str, float | None], *, name: str = "all",
                  tokenizer: tuple[str, Callable[[str], int]] | None = None) -> BenchStats:
    tok_name, count = tokenizer or make_tokenizer(None)
    vids = sorted({d.video for d in dialogues})
    rounds = [r for d in dialogues for r in d.rounds]
    qas = len(rounds)
    durs = [durations[v] for v in vids if durations.get(v)]
    mean_min = sum(durs) / len(durs) / 60.0 if durs else None
    qw = [w for r in rounds for w in words(r.user)]
    aw = [w for r in rounds for w in words(r.assistant)]
    named = [bool(named_ranges(r.user, math.inf).ranges) for r in rounds]
    firsts = [bool(named_ranges(d.rounds[0].user, math.inf).ranges) for d in dialogues if d.rounds]
    rel = sorted(named_ranges(r.user, dur).seconds / dur for d in dialogues for r in d.rounds
                 if (dur := durations.get(d.video)) and named_ranges(r.user, math.inf).ranges)
    return BenchStats(
        name=name, dialogues=len(dialogues), videos=len(vids), qas=qas,
        model_turns=sum(len(d.model_turns) for d in dialogues),
        scored_turns=sum(len(d.scored_turns) for d in dialogues),
        avg_qas_per_video=qas / len(vids) if vids else None,
        mean_video_minutes=mean_min, long=None if mean_min is None else mean_min > 10.0,
        videos_with_duration=len(durs),
        avg_turns=qas / len(dialogues) if dialogues else None,
        question_diversity=mtld(qw), answer_diversity=mtld(aw),
        question_len=sum(count(r.user) for r in rounds) / qas if qas else None,
        answer_len=sum(count(r.assistant) for r in rounds) / qas if qas else None,
        tokenizer=tok_name,
        questions_naming_range=sum(named) / qas if qas else None,
        first_questions_naming_range=sum(firsts) / len(firsts) if firsts else None,
        range_length_quartiles=[float(x) for x in np.quantile(rel, [0.25, 0.5, 0.75])] if rel else None)


def load_dialogues(path: Path) -> tuple[list[Dialogue], dict[str, Path], str]:
    """A dataset root in the released layout, or a run directory (its benchmark.json; a folder with some of a run
    directory's files but not all is refused: :meth:`~mtvbench.run.rundir.RunDirectory.detect`)."""
    from mtvbench.run.rundir import RunDirectory

    path = Path(path)
    if (rundir := RunDirectory.detect(path)) is not None:
        snap = rundir.snapshot()
        return snap.dialogues, {k: Path(v) for k, v in snap.videos.items()}, f"run {path}"
    from mtvbench.data.official import DataError, find_video, load_benchmark

    try:
        bench = load_benchmark(path)
    except DataError:  # e.g. videos missing: statistics of the text still make sense
        bench = load_benchmark(path, check_videos=False)
    videos = dict(bench.videos)
    for d in bench.dialogues:
        if d.video not in videos and (found := find_video(path, d.video)) is not None:
            videos[d.video] = found
    return bench.dialogues, videos, f"dataset {path}"


def data_mark(path: Path) -> NotABenchmark | None:
    """The mark of a dataset root (``metadata.json`` or its dialogue records) or of a run directory (its
    ``config.yaml``): why its numbers are not MT-Video-Bench numbers."""
    from mtvbench.run.rundir import RunDirectory

    if (rundir := RunDirectory.detect(path)) is not None:
        return rundir.mark()
    from mtvbench.data.buildmeta import dataset_mark

    return dataset_mark(path)


def benchmark_stats(path: Path, tokenizer_path: str | None = None, per_task: bool = True,
                    durations: dict[str, float | None] | None = None) -> list[BenchStats]:
    from mtvbench.analysis.metadata import probe_durations

    dialogues, videos, _ = load_dialogues(path)
    if durations is None:
        durations = probe_durations({v: p for v, p in videos.items() if v in {d.video for d in dialogues}})
    tok = make_tokenizer(tokenizer_path)
    out = [compute_stats(dialogues, durations, name="MT-Video-Bench (all)", tokenizer=tok)]
    if per_task:
        for t in TASKS:
            sub = [d for d in dialogues if d.task == t]
            if sub:
                out.append(compute_stats(sub, durations, name=t.abbr, tokenizer=tok))
    mark = data_mark(path)
    return [s.model_copy(update={"not_a_benchmark": mark}) for s in out]


def stats_table(rows: Sequence[BenchStats]) -> TextTable:
    """Table 1 layout (one row per subset), the measures named in a note."""
    cols = [Col("Set", "id", key="name"), Col("#QAs", "num", key="qas"),
            Col("Avg. Q/V", "num", key="avg_qas_per_video"), Col("Long", "text", key="long", optional=True),
            Col("#Turns", "num", key="avg_turns"),
            Col("Q. Div.", "num", key="question_diversity"), Col("A. Div.", "num", key="answer_diversity"),
            Col("Q. Len.", "num", key="question_len", optional=True),
            Col("A. Len.", "num", key="answer_len", optional=True),
            Col("dialogues", "num", key="dialogues", optional=True), Col("videos", "num", key="videos", optional=True),
            Col("mean video min", "num", key="mean_video_minutes", optional=True),
            Col("named range %", "num", key="questions_naming_range", optional=True),
            Col("first Q named range %", "num", key="first_questions_naming_range", optional=True),
            Col("range/video (25/50/75%)", "text", key="range_length_quartiles", optional=True)]
    body: list[list[Value]] = [
        [s.name, s.qas, s.avg_qas_per_video, None if s.long is None else ("✔" if s.long else "✗"), s.avg_turns,
         s.question_diversity, s.answer_diversity, s.question_len, s.answer_len, s.dialogues, s.videos,
         s.mean_video_minutes, _pct(s.questions_naming_range), _pct(s.first_questions_naming_range),
         None if s.range_length_quartiles is None else " / ".join(f"{100 * q:.1f}%" for q in s.range_length_quartiles)]
        for s in rows]
    notes = []
    if rows:
        s = rows[0]
        notes.append(f"Lexical diversity: {s.diversity_measure}, over lower-cased words. "
                     f"Lengths: tokens per question/answer with the tokenizer '{s.tokenizer}'. "
                     f"Video lengths known for {s.videos_with_duration}/{s.videos} videos. "
                     "named range: questions naming a time range or point of the video (as --sampling clip "
                     "reads them); range/video: the named part's length over the video's, quartiles.")
        if s.not_a_benchmark is not None:
            notes.append(f"{s.not_a_benchmark.line} (these are the statistics of that data, not of MT-Video-Bench)")
    return TextTable(columns=cols, rows=body, notes=notes)


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def stats_markdown(rows: Sequence[BenchStats]) -> str:
    return to_markdown(stats_table(rows))


def command(
    path: Annotated[Path, typer.Argument(help="dataset root (released layout), hf:ORG/NAME, or a run directory")],
    tokenizer: Annotated[str | None, typer.Option(help="local Hugging Face tokenizer folder (default: offline "
                                                       "regex tokenizer)")] = None,
    per_task: Annotated[bool, typer.Option(help="also one row per task")] = True,
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the result as JSON here")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """Benchmark statistics in the layout of the paper's Table 1."""
    rows = benchmark_stats(dataset_path(path), tokenizer, per_task=per_task)
    records = [r.model_dump(mode="json") for r in rows]
    if json_out:
        atomic_write_text(json_out, json.dumps(records, indent=2))
    print_tables([stats_table(rows)], output_format, json_obj=records)
