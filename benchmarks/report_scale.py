"""``mtvbench report`` at leaderboard scale: time, memory and the page a browser opens.

    python benchmarks/report_scale.py                    # 24 runs x 1000 dialogues, ~5.9 rounds, 3 judge runs
    python benchmarks/report_scale.py --runs 4 --dialogues 200

The runs are written here, directly (no model, no frames): one benchmark of ``--dialogues`` dialogues over
the six tasks, 5 to 7 rounds each (5.9 on average), every round a judged model turn with a five-item
checklist; per run a real run directory (``config.yaml``, ``benchmark.json`` with the run's own keys, a
``store.sqlite`` whose rows carry the fingerprints the snapshot expects, so every answer and verdict counts)
with an answer per round and ``--judge-runs`` verdicts per answer, written in one transaction. Each verdict row
is what ``RunStore.put_verdict`` stores for an ``authors`` run: the judge's fenced JSON reply, whose reading is
read again from it when the row is read (``reply_from_raw``), the parts of the verdict's key, and tokens and
latencies that differ from call to call. The videos do not exist (no thumbnails, durations unknown), as for a
report made on another machine. The runs are written once per ``--dir`` and reused by every later measurement
with the same sizes (``--src OTHER/src`` measures another checkout's ``report`` over the same runs).

Each run is then ended as ``mtvbench run`` ends one (``score_dir``: its score files and its entry in the report
cache, :mod:`mtvbench.run.reportcache`), with ``--dir``/cache as the user cache; a run whose entry is there for
this code is not ended again. Then ``mtvbench report`` over all the runs runs twice in a child process: over the
finished runs (their entries read), and with an empty cache (every run read whole: runs copied from another
machine, or a new mtvbench) — for each its wall time and peak RSS and CPU time (``os.wait4``: on a machine
shared with other work the CPU seconds say more than the wall time), the size of ``report.html`` and of the
files beside it; and, where Playwright and Chromium are installed, the finished runs' page opened in headless
Chromium: the seconds until the explorer lists its dialogues,
and until one dialogue of the last run is open with its answers (loaded from the files beside the page).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

WORDS = ("the", "red", "car", "man", "moves", "left", "scene", "after", "camera", "shows", "two", "people",
         "talk", "near", "a", "table", "while", "music", "plays", "and", "then", "door", "opens", "slowly")
ROUNDS = (6, 6, 6, 5, 6, 6, 7, 6, 5, 6)  # 5.9 on average
#: what the written runs hold (a folder of runs written by another layout is written again)
LAYOUT = 2


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_dialogues(n: int, seed: int = 0) -> list[Any]:
    from mtvbench.data.schema import TASKS, ChecklistItem, Dialogue, Round

    rng = random.Random(seed)
    out = []
    for i in range(n):
        task = TASKS[i % len(TASKS)]
        rounds = []
        for k in range(1, ROUNDS[i % len(ROUNDS)] + 1):
            items = [ChecklistItem(key=f"Q{j}", question=f"Does the answer say that {sentence(rng, 8).lower()}",
                                   expected="Yes" if rng.random() < 0.7 else "No") for j in range(1, 6)]
            rounds.append(Round(index=k, user=sentence(rng, 16) + "?", assistant=sentence(rng, 30),
                                ability="Entity Recognition", model_turn=True, checklist=items, position=k - 1))
        out.append(Dialogue(task=task, video=f"v{i % 135:03d}", event=str(i), rounds=rounds))
    return out


def write_run(out: Path, data: Path, dialogues: list[Any], model: str, judge_runs: int, seed: int) -> None:
    """One run directory of ``model`` over ``dialogues`` (module doc), every row written in one transaction."""
    from mtvbench.config import RunConfig
    from mtvbench.data.schema import Benchmark
    from mtvbench.ledger.keys import digest
    from mtvbench.protocol.authors import read_reply
    from mtvbench.records import Rejected
    from mtvbench.run.identity import RunKeys, response_fingerprint, verdict_fingerprint
    from mtvbench.run.rundir import RunDirectory, RunSnapshot
    from mtvbench.run.store import RunStore

    rng = random.Random(seed)
    cfg = RunConfig.model_validate({"data": data, "model": model, "judge": "openai:gemini-2.5-flash", "out": out,
                                    "judge_runs": judge_runs})
    bench = Benchmark(root=data, dialogues=dialogues,
                      videos={d.video: data / "videos" / f"{d.video}.mp4" for d in dialogues})
    keys = RunKeys(cfg, {v: digest(v) for v in bench.videos})
    snap = RunSnapshot.of(cfg, bench, keys)
    out.mkdir(parents=True, exist_ok=True)
    store = RunStore(out)
    store.check_identity(cfg.identity())
    RunDirectory(out).write_config(cfg)
    RunDirectory(out).write_snapshot(snap)
    store.begin_session()
    responses, verdicts, calls = [], [], []
    now = time.time()
    skill = rng.uniform(0.4, 0.9)
    for d in dialogues:
        for r in d.rounds:
            tid = d.turn_id(r.index)
            answer = sentence(rng, 45)
            tokens, latency = rng.randint(1500, 2500), rng.uniform(0.2, 3.0)
            usage = json.dumps({"prompt_tokens": tokens, "completion_tokens": 80, "total_tokens": tokens + 80})
            responses.append((tid, response_fingerprint(snap.turn_keys[tid], None), "{}", "prompt", answer, answer,
                              None, "ok", None, usage, latency, 1, now, None))
            calls.append((store.session, "model", tid, "ok", 1, tokens, 80, latency, now, None))
            key = keys.verdict(r, answer)  # the fingerprint and the parts the store keeps beside it
            assert key.fingerprint == verdict_fingerprint(snap.judge_keys[tid], digest(answer))
            parts = json.dumps(key.parts, sort_keys=True)
            for run in range(judge_runs):
                said = {f"A{it.key[1:]}": it.expected if rng.random() < skill else ("No" if it.expected == "Yes"
                                                                                      else "Yes")
                        for it in r.checklist}
                # as a judge answers (a fenced JSON object), stored as put_verdict stores an ``authors`` run: the
                # reply's reading is read again from the raw reply (reply_from_raw), not stored twice
                reply = "```json\n" + json.dumps(said, indent=2) + "\n```"
                reading = read_reply(reply)
                assert not isinstance(reading, Rejected)
                tokens, latency = rng.randint(2500, 3500), rng.uniform(0.2, 3.0)
                usage = json.dumps({"prompt_tokens": tokens, "completion_tokens": 60, "total_tokens": tokens + 60})
                verdicts.append((tid, run, key.fingerprint, parts, "ok", json.dumps(reading.verdicts),
                                 json.dumps([reply]), 1, None, usage, latency, now, None, 1))
                calls.append((store.session, "judge", tid, "ok", 1, tokens, 60, latency, now, None))
    db = store.db
    db.execute("BEGIN")
    db.executemany("INSERT INTO responses (turn_id, fingerprint, parts, prompt, text, raw_text, reasoning, outcome, "
                   "error, usage, latency_s, attempts, created, inputs) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   responses)
    db.executemany("INSERT INTO verdicts (turn_id, run, fingerprint, parts, status, verdicts, raw, attempts, error, "
                   "usage, latency_s, created, reply, reply_from_raw) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", verdicts)
    db.executemany("INSERT INTO calls (session, role, turn_id, outcome, requests, prompt_tokens, completion_tokens, "
                   "latency_s, created, cached_tokens) VALUES (?,?,?,?,?,?,?,?,?,?)", calls)
    db.execute("COMMIT")
    store.end_session()
    store.close()


def make_runs(root: Path, n_runs: int, n_dialogues: int, judge_runs: int) -> list[Path]:
    marker = root / f".complete-{LAYOUT}-{n_runs}-{n_dialogues}-{judge_runs}"
    runs = [root / f"run-{i:02d}" for i in range(n_runs)]
    if marker.exists():
        return runs
    subprocess.run(["rm", "-rf", str(root)], check=True)
    data = root / "data"
    data.mkdir(parents=True)
    dialogues = make_dialogues(n_dialogues)
    for i, out in enumerate(runs):
        write_run(out, data, dialogues, f"model-{i:02d}", judge_runs, seed=i)
        print(f"  wrote {out}", file=sys.stderr, flush=True)
    marker.write_text("ok")
    return runs


#: what ends each run as ``mtvbench run`` ends one: its score files and its entry in the report cache; only for a
#: run whose entry is missing (or made by other code), and nothing for an mtvbench without the cache
END_RUNS = """
import sys
from pathlib import Path
from mtvbench.run.rescore import score_dir
try:
    from mtvbench.run.reportcache import ReportCache, run_key
    from mtvbench.run.rundir import RunDirectory
except ImportError:  # an mtvbench without the report cache: its report reads every run whole anyway
    sys.exit(0)
for d in map(Path, sys.argv[1:]):
    draws = RunDirectory(d).config().bootstrap
    if ReportCache().get(d.resolve(), draws, run_key(d.resolve(), draws)) is not None:
        continue
    score_dir(d, lock=False)
    print("  ended", d, file=sys.stderr, flush=True)
"""


def end_runs(runs: list[Path], src: Path, cache: Path) -> float:
    """End every run as a run ends (:data:`END_RUNS`), with ``cache`` as the user cache; the seconds it took."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", END_RUNS, *map(str, runs)], check=True,
                   env=dict(os.environ, PYTHONPATH=str(src), MTVBENCH_CACHE=str(cache)))
    return time.perf_counter() - t0


def measure_report(runs: list[Path], out: Path, src: Path, cache: Path) -> dict[str, Any]:
    """``mtvbench report`` over ``runs`` with ``cache`` as the user cache, in a child process."""
    subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [sys.executable, "-m", "mtvbench", "report", *map(str, runs), "--out", str(out), "--format", "plain"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=dict(os.environ, PYTHONPATH=str(src), MTVBENCH_CACHE=str(cache)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"report failed ({status}):\n{err[-3000:]}")
    page = out / "report.html"
    beside = [p for p in out.rglob("*") if p.is_file() and p != page and p.suffix == ".js"]
    return {"seconds": seconds, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024,
            "page_mb": page.stat().st_size / 1e6,
            "beside_files": len(beside), "beside_mb": sum(p.stat().st_size for p in beside) / 1e6}


def measure_browser(page: Path) -> dict[str, Any] | None:
    """Seconds until the explorer lists its dialogues, and until a dialogue of the last run is open."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    sys.path.insert(0, str(ROOT))
    from tests.support.browser import FLAGS, chromium

    exe = chromium()
    if exe is None:
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=FLAGS)
        try:
            tab = browser.new_page()
            t0 = time.perf_counter()
            tab.goto(page.resolve().as_uri())
            tab.wait_for_selector("#f-count[data-shown]")
            listed = time.perf_counter() - t0
            runs = tab.locator("#f-run option").count()
            tab.select_option("#f-run", str(runs - 1))
            t1 = time.perf_counter()
            tab.locator("details.dlg summary").first.click()
            tab.wait_for_selector("details.dlg table.ck")
            opened = time.perf_counter() - t1
            heap = tab.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0") / 1e6
        finally:
            browser.close()
    return {"listed_s": listed, "opened_s": opened, "heap_mb": heap}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mtvbench-report-scale"))
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--dialogues", type=int, default=1000)
    ap.add_argument("--judge-runs", type=int, default=3)
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the mtvbench source tree `report` runs from")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    t0 = time.perf_counter()
    runs = make_runs(a.dir / "runs", a.runs, a.dialogues, a.judge_runs)
    made = time.perf_counter() - t0
    ended = end_runs(runs, a.src, a.dir / "cache")
    cold_cache = a.dir / "cold-cache"
    subprocess.run(["rm", "-rf", str(cold_cache)], check=True)
    cold = measure_report(runs, a.dir / "report-cold", a.src, cold_cache)
    rep = measure_report(runs, a.dir / "report", a.src, a.dir / "cache")
    browser = measure_browser(a.dir / "report" / "report.html")
    print(f"{a.runs} runs x {a.dialogues} dialogues (5.9 rounds on average, every round judged), {a.judge_runs} judge "
          f"runs; runs written in {made:.1f} s, ended (score files, report entries) in {ended:.1f} s; report from "
          f"{a.src}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print("report of | s | CPU s | peak RSS MB | report.html MB | files beside (MB) | browser: dialogues listed s | "
          "a dialogue of the last run open s | JS heap MB")
    b = browser or {}
    seen = (f"{b['listed_s']:.2f} | {b['opened_s']:.2f} | {b['heap_mb']:.0f}" if b
            else "not measured (no Playwright or Chromium)")
    for what, r, shown in (("finished runs", rep, seen), ("runs read whole (empty cache)", cold, "")):
        print(f"{what} | {r['seconds']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mb']:.0f} | {r['page_mb']:.2f} | "
              f"{r['beside_files']} ({r['beside_mb']:.1f}) | {shown}")
    print(f"ratio: finished runs / read whole = {rep['seconds'] / cold['seconds']:.3f} (wall), "
          f"{rep['cpu_s'] / cold['cpu_s']:.3f} (CPU)")
    if a.json:
        a.json.write_text(json.dumps({"report": rep, "report_read_whole": cold, "ended_s": ended,
                                      "browser": browser}, indent=2))


if __name__ == "__main__":
    main()
