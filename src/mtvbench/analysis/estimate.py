"""``mtvbench estimate``: what a run will ask, and what it will cost, before anything is asked.

It takes ``run``'s settings flags and ``--config`` (dataset, model or preset, judge, protocol, context,
frames, ...) and, **calling nothing** (a video's size, frame count and duration come from its container
header), counts:

- **requests**: the model turns the run plans (:func:`mtvbench.run.plan.rounds_to_call`) and the judge
  runs of every judged turn (``--judge-runs``; re-asks from ``--from-run`` where given);
- **prompt tokens**: each model request's frames by its provider's documented rule
  (:mod:`mtvbench.scoring.tokens`: an unknown model says "rule unknown" and nothing is added up for it),
  plus its text (the request the run would build; in self context the dataset's answers stand in for
  the model's own); each judge request's text (the dataset's answer stands in for the model's);
- **cached tokens**: the frame prefix (system prompt and frames) a provider's prefix cache serves, under
  today's order (a video's turns sent together: only a turn sent after another of its video was answered
  finds the prefix cached) and under the cache-aware order (a video's first turn first, the others once it
  is answered), both simulated over the run's concurrency and videos in flight with equal latencies;
  ``hf:`` has no prefix cache; Gemini with ``context_cache`` caches every turn's frames (making a cache
  costs its tokens once per video);
- **temporal grounding ablations**: ``--frame-timestamps on`` adds each frame's time label to every request;
  under ``--sampling clip`` a turn's frames depend on the ranges named so far, so a turn finds its video's
  frames cached only when a turn with the same frames was answered before: per video at most (turns -
  distinct frame sets) cached turns (the shared leading frames a prefix cache may still serve are not
  counted). The model row under the other ``--sampling`` choice is given beside the run's (``sampling``);
- **completion tokens**: the mean per call of a stored run of the model (``--from-run RUN_DIR``), else
  ``max_tokens`` (an upper bound), else unknown;
- **completion tokens of the judge** without either: its verdict JSON (an assumption, said so: a judge that
  thinks, as Gemini 2.5 Flash does by default, also bills its thinking tokens);
- **cost**: from ``prices`` of the config or ``--price ROLE=INPUT,OUTPUT[,CACHED]`` (per million tokens;
  cached tokens at ``cached_input``);
- **time**: the latency bound ``max(model calls x latency / concurrency, judge calls x latency / judge
  concurrency) + one latency``, with the mean latency of ``--from-run`` or ``--latency S``, else an assumed
  latency per backend kind (:data:`ASSUMED_LATENCY_S`, said so); a given ``--latency`` is at most a day.

The released benchmark (``--data hf:NJU-LINK/MT-Video-Bench``) is estimated before its gated files are
downloaded: when they are not in the Hub cache, from its shape shipped as data
(:mod:`mtvbench.data.release`: the published totals and documented assumptions, every figure labelled
"from the published statistics, not from the files"); nothing is fetched.
The dataset is checked as ``run`` checks it, videos included (the probe of :mod:`mtvbench.media.probe`,
which decodes a video's first frame once; its verdicts are cached by content): what ``run`` would refuse,
``estimate`` refuses with the same error. The numbers read back from ``--from-run``'s store are checked
like input (:class:`mtvbench.ledger.sqlite.StoredRow`).

With ``--out RUN_DIR`` the estimate is also written to ``RUN_DIR/estimate.json``, and ``mtvbench report``
then shows it beside what the run used.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, NonNegativeFloat, NonNegativeInt, ValidationError

from mtvbench.config import RunConfig, load_yaml
from mtvbench.data.official import find_video, load_benchmark
from mtvbench.data.release import LABEL, release_shape, shaped_benchmark
from mtvbench.data.schema import Benchmark, Dialogue
from mtvbench.dispatch import video_slots
from mtvbench.errors import ConfigError, InputError
from mtvbench.media.frames import VideoError, probe
from mtvbench.media.probe import PROBE_WORKERS
from mtvbench.protocol import get_protocol
from mtvbench.render.console import FormatOption, OutputFormat, dataset_path, note, print_tables
from mtvbench.render.tables import Col, TextTable
from mtvbench.run.flags import require_settings, run_flags, settings_from_flags, with_flags
from mtvbench.run.plan import build_request, rounds_to_call, turn_ranges
from mtvbench.run.settings import build_config
from mtvbench.scoring.tokens import MESSAGE_OVERHEAD, frame_rule, text_tokens
from mtvbench.scoring.usage import cost_of
from mtvbench.util.files import atomic_write_text
from mtvbench.util.jsonio import read_text_file
from mtvbench.util.strict import STRICT
from mtvbench.util.timecodes import frame_label

FILENAME = "estimate.json"
#: the longest latency per call an estimate takes (one day): beyond it the time is no estimate (and overflows)
MAX_LATENCY_S = 86_400.0
ORDERS = ("today", "cache_aware")
#: prefix caches that bill in steps: OpenAI caches prompts of 1024 tokens or more, in steps of 128
OPENAI_CACHE_MIN, OPENAI_CACHE_STEP = 1024, 128
#: seconds per call assumed without --latency or --from-run, by backend kind (the model's: 128 frames
#: and a reply of a few hundred tokens; ``judge``: a text prompt and a verdict), an assumption said so
ASSUMED_LATENCY_S: dict[str, float] = {"openai": 10.0, "gemini": 10.0, "vllm": 4.0, "hf": 30.0, "judge": 4.0,
                                       "oracle": 0.0, "refuse": 0.0, "offline": 0.0}
#: the reply of a judge run assumed without --from-run: the verdict JSON of a checklist's five items
VERDICT_REPLY = '```json\n{"A1": "Yes", "A2": "No", "A3": "Yes", "A4": "Yes", "A5": "No"}\n```'


class RoleEstimate(BaseModel):
    #: strict, so that an ``estimate.json`` read back holds what an estimate writes (counts and seconds >= 0)
    model_config = STRICT

    requests: NonNegativeInt = 0
    #: None: a rule is unknown for some request (then no total is given)
    prompt_tokens: NonNegativeInt | None = 0
    #: cached prompt tokens by order (``today``, ``cache_aware``); None: unknown
    cached_tokens: dict[str, NonNegativeInt | None] = {}
    completion_tokens: NonNegativeInt | None = None
    #: where the completion tokens come from: ``from-run``, ``max_tokens`` (an upper bound), ``unknown``
    completion_source: str = "unknown"
    #: cost by order; None without a price or a count
    cost: dict[str, NonNegativeFloat | None] = {}
    latency_s: NonNegativeFloat | None = None


class Estimate(BaseModel):
    model_config = STRICT

    model: str
    judge: str
    context: str
    #: the frame settings' key (``n128-m720-q90``) and in words
    frames: str
    frames_in_words: str | None = None
    dialogues: NonNegativeInt
    videos: NonNegativeInt
    frame_rule: str
    frame_rule_source: str | None = None
    #: frame prefix tokens per video (system prompt + frames), summed over the videos
    prefix_tokens: NonNegativeInt | None = None
    #: every video's prefix computed once: the most a cache can serve
    ideal_cached: NonNegativeInt | None = None
    model_role: RoleEstimate
    judge_role: RoleEstimate
    #: the model row under each ``--sampling`` choice (the run's own is ``model_role``): what clip-aware
    #: frames cost in requests, tokens and cached tokens
    sampling: dict[str, RoleEstimate] = {}
    #: per video the distinct frame sets its turns are sent (1 under uniform sampling), summed
    frame_sets: int | None = None
    #: seconds by the latency bound; None without a latency
    seconds: NonNegativeFloat | None = None
    #: where the latency comes from: ``from-run``, ``--latency``, or the assumed one per backend kind
    latency_source: str | None = None
    #: where the dialogues and videos come from when not from the files (:data:`mtvbench.data.release.LABEL`)
    source: str | None = None
    notes: list[str] = []


# ------------------------------------------------------------------------------ videos
@dataclass
class VideoShape:
    frames: int
    width: int
    height: int
    duration_s: float


def video_shape(path: Path, cfg: RunConfig) -> VideoShape:
    """The frames a run sends of ``path`` and their size, from the container header (nothing decoded)."""
    info = probe(path, exact=False)
    total = max(1, info.total_frames or info.reported_frames)
    w, h = cfg.frame_settings().output_size(info.width, info.height)
    return VideoShape(min(cfg.frames, total), w, h, info.duration_s)


# ------------------------------------------------------------------------------ order simulation
def simulate_hits(chains: Sequence[Sequence[int]], concurrency: int, videos_in_flight: int,
                  cache_aware: bool) -> list[int]:
    """Per video, the turns that find their video's prefix cached: a turn hits when, as it is sent, a turn
    of its video was answered before. ``chains``: per video, the lengths of its dialogue chains (a chain's
    turns in order; golden/none context: chains of one). Every call takes the same time; ``concurrency`` calls in flight
    (first come, first served), ``videos_in_flight`` videos at once; the cache-aware order sends a video's first turn
    alone and the others once it is answered."""
    waiting = deque(range(len(chains)))
    queue: deque[tuple[int, int, int]] = deque()  # (video, chain, step)
    running: list[tuple[float, int, int, int, int]] = []
    answered, left = [False] * len(chains), [sum(c) for c in chains]
    open_videos, free, now, seq = 0, concurrency, 0.0, 0
    hits = [0] * len(chains)

    def admit() -> None:
        nonlocal open_videos
        while waiting and open_videos < videos_in_flight:
            v = waiting.popleft()
            if not left[v]:
                continue
            open_videos += 1
            firsts = [(v, c, 0) for c, n in enumerate(chains[v]) if n]
            queue.extend(firsts[:1] if cache_aware else firsts)

    admit()
    while queue or running:
        while queue and free:
            v, c, step = queue.popleft()
            hits[v] += answered[v]
            free -= 1
            seq += 1
            heapq.heappush(running, (now + 1.0, seq, v, c, step))
        now = running[0][0]
        while running and running[0][0] == now:  # calls that end together are all answered before the next go
            _, _, v, c, step = heapq.heappop(running)
            free += 1
            first = not answered[v]
            answered[v] = True
            left[v] -= 1
            if step + 1 < chains[v][c]:
                queue.append((v, c, step + 1))
            if cache_aware and first:
                queue.extend((v, k, 0) for k, n in enumerate(chains[v]) if n and k != c)
            if not left[v]:
                open_videos -= 1
                admit()
    return hits


def cacheable(prefix: int, spec: str) -> int:
    """The tokens of a ``prefix`` a provider's cache serves (OpenAI: from 1024 tokens, in steps of 128)."""
    if spec.startswith("openai:") and not spec.lower().startswith("openai:gemini"):
        return 0 if prefix < OPENAI_CACHE_MIN else prefix // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
    return prefix


# ------------------------------------------------------------------------------ the estimate
@dataclass
class FromRun:
    """Means per call of a stored run, per role."""

    completion: dict[str, float]
    latency: dict[str, float]
    requests_per_call: dict[str, float]


def from_run(run_dir: Path) -> FromRun:
    """The stored calls of ``run_dir`` (its store only; nothing is asked)."""
    from mtvbench.run.rundir import RunDirectory

    store = RunDirectory.open(run_dir).store()
    try:
        rows = store.call_rows()
    finally:
        store.close()
    out = FromRun({}, {}, {})
    for role in ("model", "judge"):
        ok = [r for r in rows if r["role"] == role and r["outcome"] in ("ok", "blocked", "empty", "unparsed")]
        if ok:
            out.completion[role] = sum(int(r["completion_tokens"] or 0) for r in ok) / len(ok)
            out.latency[role] = sum(float(r["latency_s"] or 0.0) for r in ok) / len(ok)
            out.requests_per_call[role] = sum(int(r["requests"] or 1) for r in ok) / len(ok)
    if not out.completion:
        raise InputError(f"{run_dir}: --from-run: the run has no answered calls to take means from")
    return out


def _text_of(request: Any) -> str:
    history = "".join(u + a for u, a in request.chat_history or [])
    return request.prompt + history


def _model_requests(d: Dialogue, cfg: RunConfig) -> list[Any]:
    golden = {r.index: r.assistant for r in d.rounds}  # self context: the dataset's answers stand in
    return [build_request(d, r, cfg.context, None, golden if cfg.context == "self" else None, cfg.inference,
                          cfg.frames, cfg.frame_timestamps == "on") for r in rounds_to_call(d, cfg.context)]


def _frame_set(d: Dialogue, r: Any, cfg: RunConfig, duration_s: float) -> tuple[tuple[float, float], ...]:
    """Which frames round ``r``'s call is sent, as the ranges that choose them (empty: the uniform frames)."""
    if cfg.sampling != "clip":
        return ()
    golden = {x.index: x.assistant for x in d.rounds} if cfg.context == "self" else None
    return tuple((x.start, x.end) for x in turn_ranges(d, r, cfg.context, duration_s, golden).ranges)


def estimate(cfg: RunConfig, bench: Benchmark, shapes: dict[str, VideoShape], measured: FromRun | None = None,
             latency_s: float | None = None) -> Estimate:
    """The estimate of running ``cfg`` over ``bench`` (module doc); ``shapes``: per video, what is sent."""
    protocol = get_protocol(cfg.protocol_name)
    spec = cfg.backend_spec
    rule = frame_rule(spec, cfg.model_settings.options)
    system = cfg.model_settings.system or ""
    notes: list[str] = []
    m, j = RoleEstimate(), RoleEstimate()
    prompt: int | None = 0
    prefix_of: dict[str, int | None] = {}
    chains: list[list[int]] = []
    frame_sets: dict[str, set[tuple[tuple[float, float], ...]]] = {}
    for video in sorted({d.video for d in bench.dialogues}):
        shape = shapes.get(video)
        frames = None if rule is None or shape is None else rule.tokens(shape.frames, shape.width, shape.height,
                                                                         shape.duration_s)
        if frames is not None and cfg.frame_timestamps == "on" and shape is not None and not rule.as_video:
            # a label before each image; a video part carries the times as metadata, not as text
            frames += shape.frames * text_tokens(frame_label(shape.duration_s))
        prefix_of[video] = None if frames is None else frames + text_tokens(system) + MESSAGE_OVERHEAD
        chains.append([])
        frame_sets[video] = set()
    order = {v: i for i, v in enumerate(prefix_of)}
    for d in bench.dialogues:
        requests = _model_requests(d, cfg)
        if not requests:
            continue
        m.requests += len(requests)
        prefix = prefix_of[d.video]
        text = sum(text_tokens(_text_of(r)) + MESSAGE_OVERHEAD for r in requests)
        prompt = None if prompt is None or prefix is None else prompt + text + prefix * len(requests)
        chains[order[d.video]] += [len(requests)] if cfg.context == "self" else [1] * len(requests)
        shape = shapes.get(d.video)
        frame_sets[d.video].update(_frame_set(d, r, cfg, shape.duration_s if shape else 0.0)
                                   for r in rounds_to_call(d, cfg.context))
        for r in d.scored_turns:
            answered = next((x for x in d.rounds if x.index == r.answer_index), r)
            j.requests += cfg.judge_runs
            j.prompt_tokens = (j.prompt_tokens or 0) + cfg.judge_runs * (
                text_tokens(protocol.judge_prompt(answered.assistant, r)) + MESSAGE_OVERHEAD)
    m.prompt_tokens = prompt
    prefixes = [p for p in prefix_of.values()]
    known = None if any(p is None for p in prefixes) else [p or 0 for p in prefixes]
    est = Estimate(model=cfg.model, judge=cfg.judge, context=cfg.context, frames=cfg.frame_settings().key(),
                   frames_in_words=cfg.frame_settings().describe(),
                   dialogues=len(bench.dialogues), videos=len(prefix_of),
                   frame_rule=rule.name if rule else "rule unknown", frame_rule_source=rule.source if rule else None,
                   model_role=m, judge_role=j, frame_sets=sum(len(v) for v in frame_sets.values()))
    if rule is None:
        notes.append(f"frame tokens of {spec}: rule unknown (no documented rule for this model): no prompt tokens, "
                     "cached tokens or cost are given for it")
    if known is not None:
        est.prefix_tokens = sum(known)
        sets = [max(1, len(frame_sets[v])) for v in prefix_of]
        est.ideal_cached = sum(cacheable(p, spec) * (sum(c) - n) for p, c, n in zip(known, chains, sets) if sum(c))
        m.cached_tokens = _cached(cfg, spec, known, chains, notes, [len(frame_sets[v]) for v in prefix_of])
    else:
        m.cached_tokens = dict.fromkeys(ORDERS)
    j.cached_tokens = dict.fromkeys(ORDERS, 0)
    _completion(cfg, m, j, measured)
    _cost_and_time(cfg, est, measured, latency_s)
    if cfg.context == "self":
        notes.append("self context: the dataset's answers stand in for the model's own in every history")
    notes.append("text tokens by the 4-characters rule of thumb; the judge's prompts hold the dataset's answers in "
                 "place of the model's")
    est.notes = notes
    return est


def _cached(cfg: RunConfig, spec: str, prefixes: list[int], chains: list[list[int]], notes: list[str],
            sets: list[int]) -> dict[str, int | None]:
    prefix = spec.partition(":")[0].strip().lower()
    if prefix == "hf":
        notes.append("hf: runs without a prefix cache: no cached tokens")
        return dict.fromkeys(ORDERS, 0)
    if prefix == "gemini" and cfg.model_settings.options.get("context_cache"):
        notes.append("gemini context_cache: every turn reads its video's frames from the cache, whatever the order; "
                     "making each video's cache costs its tokens once (in the prompt tokens)")
        every = sum(p * sum(c) for p, c in zip(prefixes, chains))
        return dict.fromkeys(ORDERS, every)
    out: dict[str, int | None] = {}
    # the run's video slots: a chain of a video is one call in flight at a time (golden/none: chains of one)
    slots = video_slots([sum(1 for n in c if n) for c in chains], cfg.concurrency, cfg.videos_in_flight)
    for name in ORDERS:
        hits = simulate_hits(chains, cfg.concurrency, slots, name == "cache_aware")
        # --sampling clip: only a turn whose frames another turn of its video was sent before can hit
        hits = [min(h, max(0, sum(c) - n)) for h, c, n in zip(hits, chains, sets)]
        out[name] = sum(cacheable(p, spec) * h for p, h in zip(prefixes, hits))
    return out


def _completion(cfg: RunConfig, m: RoleEstimate, j: RoleEstimate, measured: FromRun | None) -> None:
    for role, r, settings in (("model", m, cfg.model_settings), ("judge", j, cfg.judge_settings)):
        if measured is not None and role in measured.completion:
            r.completion_tokens = round(measured.completion[role] * r.requests)
            r.completion_source = "from-run"
            r.requests = round(r.requests * measured.requests_per_call.get(role, 1.0))
        elif settings.max_tokens:
            r.completion_tokens = settings.max_tokens * r.requests
            r.completion_source = "max_tokens (an upper bound)"
        elif role == "judge" and cfg.judge != "offline":
            r.completion_tokens = (text_tokens(VERDICT_REPLY) + 1) * r.requests
            r.completion_source = "assumed: the verdict JSON alone (a judge that thinks also bills its thinking)"
        elif role == "judge":
            r.completion_tokens = 0
            r.completion_source = "none (offline, nothing is called)"


def _cost_and_time(cfg: RunConfig, est: Estimate, measured: FromRun | None, latency_s: float | None) -> None:
    for role, r in (("model", est.model_role), ("judge", est.judge_role)):
        price = cfg.price(role)
        for order in ORDERS:
            cached = r.cached_tokens.get(order)
            known = None not in (price, r.prompt_tokens, r.completion_tokens, cached)
            r.cost[order] = cost_of(price, r.prompt_tokens, cached, r.completion_tokens) if known else None  # type: ignore[arg-type]
        r.latency_s = measured.latency.get(role) if measured is not None else latency_s
    est.latency_source = "from-run" if measured is not None else "--latency" if latency_s is not None else None
    if measured is None and latency_s is None:
        kinds = (("model", est.model_role, cfg.backend_spec), ("judge", est.judge_role, cfg.judge))
        for role, r, spec in kinds:
            kind = spec.partition(":")[0].strip().lower()
            r.latency_s = ASSUMED_LATENCY_S.get(kind if kind in ("oracle", "refuse", "offline") or role == "model"
                                                else "judge")
        said = ", ".join(f"{role} {_num(r.latency_s, 0)} s" for role, r, _ in kinds if r.latency_s is not None)
        est.latency_source = f"assumed per call ({said}; an assumption: give --latency S or --from-run)"
    m, j = est.model_role, est.judge_role
    if m.latency_s is None and j.latency_s is None:
        return
    jc = cfg.judge_concurrency or cfg.concurrency
    lm, lj = m.latency_s or 0.0, j.latency_s or 0.0
    est.seconds = max(m.requests * lm / cfg.concurrency, j.requests * lj / jc) + max(lm, lj)


# ------------------------------------------------------------------------------ the command's pieces
def shapes_of(bench: Benchmark, cfg: RunConfig) -> tuple[dict[str, VideoShape], list[str]]:
    """What is sent of every video, from its header; videos that cannot be opened are named."""
    shapes, problems = {}, []
    paths = {name: bench.videos.get(name) or find_video(Path(bench.root), name)
             for name in sorted({d.video for d in bench.dialogues})}
    problems += [f"{name}: no video file under videos/" for name, p in paths.items() if p is None]

    def shape(item: tuple[str, Path]) -> tuple[str, VideoShape | str]:
        try:
            return item[0], video_shape(item[1], cfg)
        except (VideoError, OSError) as e:
            return item[0], str(e)

    with ThreadPoolExecutor(PROBE_WORKERS) as pool:  # PyAV reads headers without the GIL
        for name, got in pool.map(shape, [(n, p) for n, p in paths.items() if p is not None]):
            if isinstance(got, str):
                problems.append(f"{name}: {got}")
            else:
                shapes[name] = got
    return shapes, problems


def estimate_shape(cfg: RunConfig, run_dir: Path | None = None, latency_s: float | None = None) -> Estimate:
    """Estimate ``cfg`` over a benchmark of the released one's shape (:mod:`mtvbench.data.release`), its files
    not read: every figure from the published statistics or a documented assumption, said so."""
    protocol = get_protocol(cfg.protocol_name)
    bench, sizes = shaped_benchmark()
    bench = protocol.apply_all(bench.model_copy(update={
        "dialogues": [d for d in bench.dialogues if d.task in cfg.selected_tasks]})).limit(cfg.limit)
    shapes = {name: VideoShape(min(cfg.frames, s.frames), *cfg.frame_settings().output_size(s.width, s.height),
                               s.duration_s) for name, s in sizes.items()}
    est = estimate(cfg, bench, shapes, from_run(run_dir) if run_dir is not None else None, latency_s)
    est.source = LABEL
    est.notes = [*release_shape().describe(), *est.notes]
    return est


def release_files(data: Path | str) -> Path | None:
    """The folder of ``data`` when it is the released benchmark on the Hub and its files are in the Hub
    cache (read offline: nothing is fetched), else None; any other dataset: its folder as ``run`` finds it."""
    from mtvbench.data.hub import HubSpec, is_hub_spec, resolve_dataset
    from mtvbench.errors import MtvbenchError

    text = str(data)
    if not is_hub_spec(text) or HubSpec.parse(text).repo_id.lower() != release_shape().repo.lower():
        return dataset_path(data)
    try:
        return resolve_dataset(text, offline=True, note=lambda m: note("dataset", m, style="cyan"))
    except MtvbenchError:
        return None


def estimate_config(cfg: RunConfig, run_dir: Path | None = None, latency_s: float | None = None) -> Estimate:
    """Load the dataset of ``cfg`` as ``run`` does and estimate it: a video ``run`` would refuse (missing, empty,
    truncated, not a video) is the same one error naming each (:func:`mtvbench.media.probe.check_video`, its
    verdicts cached by content, as for ``validate`` and ``run``)."""
    protocol = get_protocol(cfg.protocol_name)
    bench = protocol.apply_all(load_benchmark(cfg.data, tasks=cfg.selected_tasks))
    bench = bench.limit(cfg.limit)
    shapes, problems = shapes_of(bench, cfg)
    measured = from_run(run_dir) if run_dir is not None else None
    est = estimate(cfg, bench, shapes, measured, latency_s)
    est.sampling[cfg.sampling] = est.model_role
    if cfg.frame_rule == "uniform":  # the other --sampling choice (an authors' script's frames have no other)
        other = "uniform" if cfg.sampling == "clip" else "clip"
        est.sampling[other] = estimate(cfg.model_copy(update={"sampling": other}), bench, shapes, measured,
                                       latency_s).model_role
    est.notes += [f"video not read, its frames not counted: {p}" for p in problems]
    return est


def _num(v: int | float | None, digits: int = 0) -> str:
    if v is None:
        return "unknown"
    return f"{v:,.{digits}f}"


def estimate_table(est: Estimate) -> TextTable:
    rows: list[list[Any]] = []
    roles = [("model", est.model_role), ("judge", est.judge_role)]
    roles[1:1] = [(f"model, --sampling {k}", r) for k, r in est.sampling.items() if r is not est.model_role]
    for name, r in roles:
        rows.append([name, r.requests, r.prompt_tokens, r.cached_tokens.get("today"),
                     r.cached_tokens.get("cache_aware"), r.completion_tokens, r.cost.get("today"),
                     r.cost.get("cache_aware")])
    cols = [Col("Role", "id"), Col("Requests", "num"), Col("Prompt tokens", "num"),
            Col("Cached (today's order)", "num", key="cached_today"),
            Col("Cached (cache-aware)", "num", key="cached_cache_aware"),
            Col("Completion tokens", "num"), Col("Cost (today)", "num", 4, key="cost_today"),
            Col("Cost (cache-aware)", "num", 4, key="cost_cache_aware")]
    source = f" ({est.source})" if est.source else ""
    intro = [f"{est.dialogues:,} dialogues over {est.videos:,} videos{source}; model {est.model}, judge {est.judge}, "
             f"context {est.context}; frames: {est.frames_in_words or est.frames}; frame tokens: {est.frame_rule}"
             + (f" ({est.frame_rule_source})" if est.frame_rule_source else ""),
             f"completion tokens: model {est.model_role.completion_source}, judge {est.judge_role.completion_source}; "
             f"time: {_num(est.seconds, 1)} s"
             + (f" (latency: {est.latency_source})" if est.latency_source else "")
             + ("" if est.seconds is not None else " (give --latency S or --from-run)")]
    if est.frame_sets is not None and est.frame_sets > est.videos:
        intro.append(f"--sampling clip: {est.frame_sets} distinct frame sets over {est.videos} videos (a video's turns "
                     f"share its frames in a prefix cache only where they are sent the same ones)")
    if est.ideal_cached is not None:
        intro.append(f"each video's frames and system prompt: {est.prefix_tokens:,} tokens over all videos; at best "
                     f"(each video's sent once, then read from the provider's cache by its other turns) "
                     f"{est.ideal_cached:,} prompt tokens come from the cache")
    return TextTable(cols, rows, title="Estimate (nothing was called)", intro=intro, notes=list(est.notes))


def write_estimate(est: Estimate, run_dir: Path) -> Path:
    path = Path(run_dir) / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, est.model_dump_json(indent=2))
    return path


def read_estimate(run_dir: Path) -> Estimate | None:
    """The estimate written into a run directory, or None when there is none; one that is not an estimate (edited,
    negative counts, not JSON) is one :class:`InputError` naming the file and the field."""
    path = Path(run_dir) / FILENAME
    if not path.is_file():
        return None
    try:
        return Estimate.model_validate_json(read_text_file(path, "estimate", 16 << 20))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "the file"
        raise InputError(f"{path}: field '{where}': {err['msg']}",
                         hint="write it again with `mtvbench estimate ... --out RUN_DIR`, or remove it") from None


ESTIMATE_FLAGS = run_flags()


@with_flags(ESTIMATE_FLAGS)
def command(
    given: dict[str, Any],
    from_run_dir: Annotated[Path | None, typer.Option("--from-run", help="a stored run of the model: completion "
                                                      "tokens, latency and re-asks per call from it")] = None,
    latency: Annotated[float | None, typer.Option(help="seconds per call, for the time (without --from-run)")] = None,
    price: Annotated[list[str] | None, typer.Option(
        "--price", metavar="ROLE=IN,OUT[,CACHED]",
        help="price per million tokens of a role (model or judge): input, output and, optionally, cached input; "
             "repeatable, e.g. --price judge=0.30,2.50,0.03 (YAML: prices)")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML file with run's settings (flags override it)")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """Requests, prompt and cached tokens, cost and time of a run, before it runs: nothing is called.

    The dataset is checked as run checks it (exit 2 on what run would refuse). Takes run's settings flags
    and --config; with --out the estimate is kept in the run directory for `report` (estimate vs actual)."""
    if latency is not None and not (math.isfinite(latency) and 0 < latency <= MAX_LATENCY_S):
        raise ConfigError(f"--latency: must be a number of seconds > 0 and at most {MAX_LATENCY_S:,.0f} (one day), "
                          f"got {latency}")
    values, origins = settings_from_flags(load_yaml(config) if config else {}, given, ESTIMATE_FLAGS)
    if price:
        values["prices"] = {**(values.get("prices") or {}), **parse_prices(price)}
        origins.update({f"prices.{role}": "--price" for role in parse_prices(price)})
    require_settings(values, ("data", "model", "judge"))
    out = values.get("out")
    values.setdefault("out", Path(".mtvbench-estimate"))
    cfg = build_config(values, str(config) if config else "command line", flags=origins, needs_server=False)
    files = release_files(cfg.data)
    if files is None:
        est = estimate_shape(cfg, from_run_dir, latency)
    else:
        est = estimate_config(cfg.model_copy(update={"data": files}), from_run_dir, latency)
    print_tables([estimate_table(est)], output_format, json_obj=est.model_dump(mode="json"))
    if out is not None:
        note("wrote", str(write_estimate(est, Path(out))), style="green")


def parse_prices(items: list[str]) -> dict[str, dict[str, float]]:
    """``--price ROLE=IN,OUT[,CACHED]`` items -> ``prices`` of the settings (checked there); a malformed item
    is one :class:`ConfigError` naming it."""
    out: dict[str, dict[str, float]] = {}
    for item in items:
        role, sep, numbers = item.partition("=")
        parts = [p.strip() for p in numbers.split(",")]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if not sep or role.strip() not in ("model", "judge") or len(values) not in (2, 3) \
                or not all(math.isfinite(v) and v >= 0 for v in values):
            raise ConfigError(f"--price {item!r}: must look like ROLE=INPUT,OUTPUT[,CACHED] with ROLE model or "
                              "judge and prices per million tokens >= 0, e.g. --price judge=0.30,2.50,0.03")
        out[role.strip()] = dict(zip(("input", "output", "cached_input"), values))
    return out


def estimate_vs_actual(est: Estimate, usage: Any) -> list[list[Any]]:
    """Rows of the report: what the estimate said and what the run used, per role."""
    rows = []
    for name, e, a in (("model", est.model_role, usage.model), ("judge", est.judge_role, usage.judge)):
        rows.append([name, "estimate", str(e.requests), _num(e.prompt_tokens), _num(e.cached_tokens.get("today")),
                     _num(e.completion_tokens), _num(e.cost.get("today"), 4)])
        rows.append([name, "actual", str(a.requests), _num(a.prompt_tokens),
                     "not recorded" if a.cached_not_recorded == a.calls else _num(a.cached_tokens),
                     _num(a.completion_tokens), _num(a.cost, 4)])
    return rows


__all__ = ["ASSUMED_LATENCY_S", "Estimate", "FILENAME", "RoleEstimate", "command", "estimate", "estimate_config",
           "estimate_shape", "estimate_table", "estimate_vs_actual", "parse_prices", "read_estimate", "release_files",
           "simulate_hits", "write_estimate"]
