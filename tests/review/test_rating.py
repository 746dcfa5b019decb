"""Raters on a run directory (issue 19): the seeded sample, the blind rater view, jobs, ratings and undo,
and the export that `mtvbench agreement --human` reads (with the same reader), through to Table 3."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.errors import ConfigError
from mtvbench.review.run_source import RunSource
from mtvbench.review.source import open_source
from mtvbench.review.store import ReviewStore
from mtvbench.scoring.human import answer_digest, load_human
from tests.review.conftest import item_url, make_client, who
from tests.support.runs import make_store_run

pytest.importorskip("starlette", reason="the review web app needs mtvbench[review]")

HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1">'


def varied(did: str, k: int, golden: str) -> str:
    """Some answers wrong (so that the judge's scores vary), one of them hostile markup."""
    if (len(did) + k) % 3 == 0:
        return f"I am not sure what happens. {HOSTILE}"
    return golden


@pytest.fixture(scope="module")
def run_master(sample_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store_run(sample_master, tmp_path_factory.mktemp("rated") / "run", answer=varied, bootstrap=0)


@pytest.fixture
def run(run_master: Path, tmp_path: Path) -> Path:
    """A private copy of the run directory (its review store starts empty)."""
    return Path(shutil.copytree(run_master, tmp_path / "run"))


def prepared(run: Path, **kw: int) -> tuple[RunSource, ReviewStore]:
    source = open_source(run)
    assert isinstance(source, RunSource) and source.work == "rate"
    store = ReviewStore(source.default_store)
    source.prepare(store, **kw)
    return source, store


def rate_all(store: ReviewStore, source: RunSource, rater: str, flip: set[str] = frozenset(), skip: int = 0) -> None:
    """``rater`` rates every item (but the last ``skip``): the expected answer, inverted on the keys in ``flip``."""
    items = source.load()
    store.sync(items)  # what the app does when it loads them
    for it in items[:len(items) - skip]:
        marks = {}
        for key in it.checklist_keys():
            rnd, q = key.split(".")
            exp = next(c.expected for c in it.checklists[int(rnd)] if c.key == q)
            marks[key] = ({"Yes": "No", "No": "Yes"}[exp]) if f"{it.id}#{key}" in flip else exp
        store.rate(it, rater, marks)


def test_the_sample_is_seeded_kept_and_the_same_for_every_rater(run: Path, tmp_path: Path) -> None:
    source, store = prepared(run, per_task=1, seed=3)
    items = source.load()
    # one dialogue per task, each with at least one rated turn, every rated turn with its answer and checklist
    assert sorted(it.task.value for it in items) == sorted({it.task.value for it in items}) and len(items) == 6
    assert all(it.answers and set(it.answers) == set(it.checklists) for it in items)
    # another process (another rater, a restart) gets the same sample without options; other options are refused
    again, _ = prepared(run)
    assert [it.id for it in again.load()] == [it.id for it in items] and again.sample == source.sample
    with pytest.raises(ConfigError, match="--sample-per-task 2 .the sample has 1."):
        prepared(run, per_task=2)
    # the draw depends on the seed only: a fresh store with the same seed draws the same sample
    other = RunSource(run)
    other.prepare(ReviewStore(tmp_path / "other.sqlite"), per_task=1, seed=3)
    assert other.sample.ids == source.sample.ids
    draws = set()
    for seed in range(6):
        s = RunSource(run)
        s.prepare(ReviewStore(tmp_path / f"s{seed}.sqlite"), per_task=1, seed=seed)
        draws.add(tuple(s.sample.ids))
    assert len(draws) > 1
    # every dialogue of a task that has fewer than per_task
    everything = RunSource(run)
    everything.prepare(ReviewStore(tmp_path / "all.sqlite"), per_task=20)
    assert len(everything.load()) == 13


def test_a_rater_sees_the_answers_and_questions_but_no_expected_answer_verdict_or_other_rater(run: Path) -> None:
    prepared(run, per_task=1)
    c = make_client(run)
    first = c.get("/api/next", headers=who("r1", "rater")).json()["id"]
    d = c.get(item_url(first), headers=who("r1", "rater")).json()
    rated = [r for r in d["rounds"] if r["rated"]]
    assert rated and all(r["answer"] and r["questions"] for r in rated)
    assert d["question_keys"] == [f"{r['index']}.{q['key']}" for r in rated for q in r["questions"]]
    text = json.dumps(d)
    for leak in ('"expected"', '"verdicts"', '"score"', '"judge', '"reviews"', '"status"'):
        assert leak not in text, leak
    r = c.post(item_url(first, "/rating"), headers=who("r1", "rater"),
               json={"rater": "r1", "marks": dict.fromkeys(d["question_keys"], "No"), "content_hash": d["content_hash"],
                     "active_seconds": 30})
    assert r.status_code == 200, r.text
    # r2 sees nothing of r1's rating: not in the item, not in the list, not in progress
    d2 = c.get(item_url(first), headers=who("r2", "rater")).json()
    assert d2["mine"] is None and d2["raters"] is None and '"No"' not in json.dumps(d2)
    rows = c.get("/api/items", headers=who("r2", "rater")).json()["items"]
    assert {x["mine"] for x in rows} == {None} and {x["raters"] for x in rows} == {None}
    own = c.get("/api/progress", headers=who("r2", "rater")).json()
    assert own["scope"] == "rating-own" and own["me"]["done"] == 0 and "raters" not in own
    # the senior follows the raters: counts, who rated, the active time
    rows = c.get("/api/items", headers=who("lead", "senior")).json()["items"]
    assert next(x for x in rows if x["id"] == first)["raters"] == 1
    p = c.get("/api/progress", headers=who("lead", "senior")).json()
    assert p["scope"] == "rating" and p["items"] == 6 and [(x["name"], x["done"]) for x in p["raters"]] == [("r1", 1)]
    assert p["raters"][0]["seconds_mean"] == 30


def test_jobs_and_kinds_of_work(run: Path, sample: Path) -> None:
    prepared(run, per_task=1)
    c = make_client(run)
    first = c.get("/api/next", headers=who("r1", "rater")).json()["id"]
    r = c.get("/api/items", headers=who("ann1", "annotator"))
    assert r.status_code == 403 and "rates a run's answers" in r.json()["error"]
    r = c.post(item_url(first, "/rating"), headers=who("lead", "senior"), json={"rater": "lead", "marks": {}})
    assert r.status_code == 403 and "only raters rate" in r.json()["error"]
    r = c.post(item_url(first, "/review"), headers=who("lead", "senior"),
               json={"annotator": "lead", "decision": "accept"})
    assert r.status_code == 409 and "decisions are made on a build workspace or a dataset" in r.json()["error"]
    r = c.post(item_url(first, "/rating"), headers=who("r1", "rater"), json={"rater": "r2", "marks": {}})
    assert r.status_code == 403
    # a dataset is verified, not rated
    d = make_client(sample)
    r = d.get("/api/items", headers=who("r1", "rater"))
    assert r.status_code == 403 and "sign in as annotator or senior" in r.json()["error"]
    # add-user gives only the jobs of the folder's work
    res = CliRunner().invoke(_app(), ["review", "add-user", str(run), "ann1", "--job", "annotator"])
    assert res.exit_code == 2 and "rater, senior for a run" in " ".join(res.output.split())
    res = CliRunner().invoke(_app(), ["review", "add-user", str(run), "r1", "--job", "rater"])
    assert res.exit_code == 0 and "#token=" in res.output


def _app():  # noqa: ANN202
    from mtvbench.cli import app

    return app


def test_a_rating_answers_every_question_and_can_be_undone(run: Path) -> None:
    prepared(run, per_task=1)
    c = make_client(run)
    first = c.get("/api/next", headers=who("r1", "rater")).json()["id"]
    d = c.get(item_url(first), headers=who("r1", "rater")).json()
    keys = d["question_keys"]
    post = lambda marks, **kw: c.post(item_url(first, "/rating"), headers=who("r1", "rater"),  # noqa: E731
                                      json={"rater": "r1", "marks": marks, "content_hash": d["content_hash"]} | kw)
    r = post(dict.fromkeys(keys[:-1], "Yes"))
    assert r.status_code == 422 and "1 left" in r.json()["error"] and keys[-1] in r.json()["error"]
    r = post(dict.fromkeys(keys, "Yes") | {"99.Q1": "Yes"})
    assert r.status_code == 422 and "no checklist question 99.Q1" in r.json()["error"]
    r = post(dict.fromkeys(keys, "maybe"))
    assert r.status_code == 422
    assert post(dict.fromkeys(keys, "Yes"), content_hash="0" * 16).status_code == 409
    first_seq = post(dict.fromkeys(keys, "Yes")).json()["undo"]
    assert c.get("/api/next", headers=who("r1", "rater")).json()["id"] != first
    second = post(dict.fromkeys(keys, "No")).json()
    assert second["mine"]["marks"] == dict.fromkeys(keys, "No")
    assert c.post(item_url(first, "/undo"), headers=who("r1", "rater"), json={"seq": first_seq}).status_code == 409
    back = c.post(item_url(first, "/undo"), headers=who("r1", "rater"), json={"seq": second["undo"]}).json()
    assert back["mine"]["marks"] == dict.fromkeys(keys, "Yes")
    mine = c.get(item_url(first), headers=who("r1", "rater")).json()["mine"]
    assert mine["marks"] == dict.fromkeys(keys, "Yes")
    # drafts of the rate page are the rater's own scope
    r = c.put(item_url(first, "/draft"), headers=who("r1", "rater"),
              json={"scope": "rate", "content_hash": d["content_hash"], "data": {"marks": {keys[0]: "No"}}})
    assert r.status_code == 200
    drafts = c.get(item_url(first), headers=who("r1", "rater")).json()["drafts"]
    assert drafts["rate"]["data"]["marks"] == {keys[0]: "No"}
    assert c.get(item_url(first), headers=who("r2", "rater")).json()["drafts"] == {}


def test_the_export_is_the_human_file_agreement_reads_through_to_table_3(run: Path, tmp_path: Path) -> None:
    source, store = prepared(run, per_task=1, seed=2)
    out = tmp_path / "human.jsonl"
    res = CliRunner().invoke(_app(), ["review", "export", str(run), "--out", str(out)])
    assert res.exit_code == 2 and "no ratings yet" in " ".join(res.output.split()) and not out.exists()
    items = source.load()
    some = {f"{it.id}#{k}" for it in items for k in it.checklist_keys()[::4]}
    rate_all(store, source, "r1")
    rate_all(store, source, "r2", flip=some, skip=1)
    res = CliRunner().invoke(_app(), ["review", "export", str(run), "--out", str(out)])
    assert res.exit_code == 3 and "INCOMPLETE ratings: r2 has 1 of 6" in " ".join(res.output.split())
    rate_all(store, source, "r2", flip=some)
    res = CliRunner().invoke(_app(), ["review", "export", str(run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    # one reader: agreement's reader gives back every rating, with rater, time, seed and the rated answer
    recs = load_human(out)
    n_questions = sum(len(it.checklist_keys()) for it in items)
    assert len(recs) == 2 * n_questions and {r.annotator for r in recs} == {"r1", "r2"}
    assert {r.seed for r in recs} == {2} and all(r.at for r in recs)
    by_id = {it.id: it for it in items}
    for r in recs:
        did, _, rnd = r.turn_id.rpartition("#")
        assert r.answer_digest == answer_digest(by_id[did].answers[int(rnd)])
    ratings, _ = store.ratings({it.id: it.content_hash for it in items})
    for r in recs:
        did, _, rnd = r.turn_id.rpartition("#")
        mine = next(x for x in ratings[did] if x.rater == r.annotator)
        assert mine.marks[f"{rnd}.Q{r.item[1:]}"] == r.verdict and mine.at == r.at
    # Table 3 at the paper's unit: one row per judge, correlations with CIs, alpha among the raters
    res = CliRunner().invoke(_app(), ["agreement", str(run), "--human", str(out), "--level", "dialogue",
                                      "--bootstrap", "200", "--format", "plain"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[1].split("\t") == ["Judge", "Spearman", "95% CI", "Kendall-Tau", "95% CI", "Pearson", "95% CI", "n"]
    row = lines[2].split("\t")
    assert row[0] == "offline" and row[-1] == "6" and row[1] != "–" and row[2].startswith("[")
    assert "Human raters: 2 (sample seed 2); Krippendorff's alpha among them" in res.stdout


def test_answers_rated_on_other_answers_are_left_out(run: Path, sample_master: Path, tmp_path: Path) -> None:
    """A run whose judge judged other answers than the raters rated is not compared on those turns."""
    source, store = prepared(run, per_task=1)
    rate_all(store, source, "r1")
    out = tmp_path / "human.jsonl"
    assert CliRunner().invoke(_app(), ["review", "export", str(run), "--out", str(out)]).exit_code == 0
    golden = make_store_run(sample_master, tmp_path / "golden", bootstrap=0)  # other answers on some turns
    res = CliRunner().invoke(_app(), ["agreement", str(run), str(golden), "--human", str(out), "--format", "plain"])
    assert res.exit_code == 0, res.output
    assert "rated on another answer than the judge judged" in res.stdout
