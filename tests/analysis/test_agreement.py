from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mtvbench.analysis.agreement import (
    agreement_markdown,
    agreement_report,
    cohen_kappa,
    correlations,
    fleiss_kappa,
)
from mtvbench.errors import InputError
from mtvbench.run.rundir import RunDirectory
from mtvbench.scoring.human import AgreementError, load_human
from tests.support.datasets import make_dataset
from tests.support.runs import make_store_run


def test_cohen_kappa_hand_computed():
    # po = 3/4; pe = .5*.25 + .5*.75 = .5; kappa = (.75 - .5) / .5
    assert cohen_kappa(["Yes", "Yes", "No", "No"], ["Yes", "No", "No", "No"]) == pytest.approx(0.5)
    assert cohen_kappa(["Yes", "No"], ["Yes", "No"]) == pytest.approx(1.0)
    assert cohen_kappa(["Yes", "Yes"], ["Yes", "Yes"]) is None  # chance agreement 1: undefined
    assert cohen_kappa([], []) is None


def test_fleiss_kappa_hand_computed():
    # P_i = 1, 1/3, 1, 1/3 -> mean 2/3; p_Y = p_N = 1/2 -> Pe = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3
    r = [["Y", "Y", "Y"], ["Y", "Y", "N"], ["N", "N", "N"], ["Y", "N", "N"]]
    assert fleiss_kappa(r) == pytest.approx(1 / 3)
    assert fleiss_kappa([["Y", "Y"], ["N", "N"]]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"Fleiss' kappa needs the same number \(>= 2\) of ratings per item"):
        fleiss_kappa([["Y", "N"], ["Y"]])


def test_correlations_hand_computed():
    c = correlations([1, 2, 3, 4], [1, 3, 2, 4])
    assert c["spearman"] == pytest.approx(0.8)  # 1 - 6*2/(4*15)
    assert c["kendall"] == pytest.approx(4 / 6)  # 5 concordant, 1 discordant
    assert c["pearson"] == pytest.approx(0.8)  # 4 / sqrt(5*5)
    assert correlations([1, 1, 1], [1, 2, 3]) == {"spearman": None, "kendall": None, "pearson": None}


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agree")
    data = make_dataset(tmp / "data")

    def answer(did, k, golden):  # some turns wrong so scores vary
        return golden if (len(did) + k) % 3 else "I am not sure what happens."

    # judge run 1 flips item A1 of every turn: 12 turns x 5 items, 12 items not unanimous
    run = make_store_run(data, tmp / "run", answer=answer, judge_runs=3,
                         flip=lambda tid, r, key: r == 1 and key == "A1")
    return tmp, run


def test_agreement_turn_level_and_kappas(judged):
    tmp, run_dir = judged
    run = RunDirectory.open(run_dir).load(bootstrap=0)
    turns = sorted((t.turn_id, t.score) for ds in run.dscores for t in ds.turns)
    assert len(turns) == 12
    # humans: the judge's score with a monotone distortion on half the turns, as percent
    human = [(tid, 100 * s ** 2 if i % 2 else 100 * s) for i, (tid, s) in enumerate(turns)]
    path = tmp / "human.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["turn_id", "score", "annotator"])
        w.writerows([tid, s, "h1"] for tid, s in human)
    rep = agreement_report(path, [run_dir])
    row = rep.rows[0]
    exp = correlations([s for _, s in turns], [s for _, s in human])
    assert row.n == 12
    assert row.spearman == pytest.approx(exp["spearman"]) and row.pearson == pytest.approx(exp["pearson"])
    assert row.kendall == pytest.approx(exp["kendall"])
    assert row.judge_runs == 3 and row.n_items_all_runs == 60
    assert row.unanimous_share == pytest.approx(48 / 60)
    # recompute Fleiss' kappa from the stored verdicts
    ratings = []
    for tid in sorted(run.verdicts):
        for key in ("A1", "A2", "A3", "A4", "A5"):
            ratings.append([run.verdicts[tid][r].verdicts[key] for r in range(3)])
    assert row.fleiss_kappa_runs == pytest.approx(fleiss_kappa(ratings))
    assert row.fleiss_kappa_runs < 1.0
    md = agreement_markdown(rep)
    assert "| offline |" in md and "Spearman" in md


def test_agreement_item_level_cohen_kappa_and_dialogue_level(judged):
    tmp, run_dir = judged
    run = RunDirectory.open(run_dir).load(bootstrap=0)
    recs = []
    agree = disagree = 0
    for tid, runs in sorted(run.verdicts.items()):
        for key in ("A1", "A2", "A3", "A4", "A5"):
            labels = [runs[r].verdicts[key] for r in range(3)]
            maj = max(set(labels), key=labels.count)
            # the human disagrees with the judge's majority on item A2 of every turn
            v = ("No" if maj == "Yes" else "Yes") if key == "A2" else maj
            agree += v == maj
            disagree += v != maj
            did, _, k = tid.rpartition("#")
            recs.append({"dialogue_id": did, "round": int(k), "item": "Q" + key[1:], "verdict": v})
    path = tmp / "items.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs))
    row = agreement_report(path, [run_dir]).rows[0]
    assert row.n_items == 60 and disagree == 12
    judge_maj, human = [], []
    for r in recs:
        tid = f"{r['dialogue_id']}#{r['round']}"
        labels = [run.verdicts[tid][x].verdicts["A" + r["item"][1:]] for x in range(3)]
        judge_maj.append(max(set(labels), key=labels.count))
        human.append(r["verdict"])
    assert row.cohen_kappa == pytest.approx(cohen_kappa(judge_maj, human))
    assert row.cohen_kappa < 1.0
    drow = agreement_report(path, [run_dir], level="dialogue").rows[0]
    assert drow.n == 6


def test_human_file_errors(tmp_path):
    p = tmp_path / "h.json"
    p.write_text(json.dumps([{"round": 3, "score": 1}]))
    with pytest.raises(AgreementError, match="name the turn"):
        load_human(p)
    p.write_text(json.dumps([{"task": "summary", "video": "v", "event": 0, "round": 3, "item": "Q1",
                              "verdict": "maybe"}]))
    with pytest.raises(AgreementError, match="Yes or No"):
        load_human(p)
    p.write_text(json.dumps([{"task": "summary", "video": "v", "event": 0, "round": 3, "item": "Q1",
                              "verdict": "yes"}]))
    rec = load_human(p)[0]
    assert rec.turn_id == "content_summary/v/0#3" and rec.item == "A1" and rec.verdict == "Yes"
    assert not Path(tmp_path / "missing.csv").exists()
    with pytest.raises(InputError, match="not found"):
        load_human(tmp_path / "missing.csv")


def test_a_human_file_that_matches_nothing_is_an_error_not_an_empty_table(judged):
    from typer.testing import CliRunner

    from mtvbench.cli import app

    tmp, run_dir = judged
    empty = tmp / "empty.csv"
    empty.write_text("")
    other = tmp / "other.csv"
    other.write_text("turn_id,score\nobject_reference/nosuchvideo/0#3,50\n")
    for f, words in ((empty, "no human records"), (other, "none of its 1 records is a scored turn")):
        res = CliRunner().invoke(app, ["agreement", "--human", str(f), str(run_dir)])
        assert res.exit_code == 2 and words in " ".join(res.output.split()) and "Traceback" not in res.output


def test_why_a_cell_is_undefined_is_said_once_under_the_table(tmp_path):
    """A judge that gives every turn the same score has no correlation with the humans, and one judge run
    has no Fleiss' kappa: the cells read "–" and one line per reason says why (not every cell)."""
    from typer.testing import CliRunner

    from mtvbench.cli import app

    data = make_dataset(tmp_path / "data")
    run_dir = make_store_run(data, tmp_path / "run", judge_runs=1)  # golden answers: every turn scores 100
    run = RunDirectory.open(run_dir).load(bootstrap=0)
    assert len({t.score for ds in run.dscores for t in ds.turns}) == 1
    path = tmp_path / "human.csv"
    path.write_text("turn_id,score\n" + "".join(f"{t.turn_id},{i % 4 / 4}\n" for i, t in enumerate(
        t for ds in run.dscores for t in ds.turns)))
    rep = agreement_report(path, [run_dir])
    assert rep.rows[0].spearman is None
    assert rep.rows[0].undefined["pearson"] == "the judge gave every turn the same score"
    r = CliRunner().invoke(app, ["agreement", str(run_dir), "--human", str(path)])
    assert r.exit_code == 0, r.output
    row = next(line.split("\t") for line in r.stdout.splitlines() if line.startswith("offline\t"))
    assert row[1:7] == ["–"] * 6 and row[7] == "12"  # each correlation and its CI
    assert r.stdout.count("same score") == 1 and r.stdout.count("one judge run per turn") == 1
    assert "–: offline: Spearman, Kendall-Tau, Pearson undefined: the judge gave every turn the same score." in r.stdout
    assert "–: offline: Fleiss' kappa across runs, unanimous share undefined: one judge run per turn." in r.stdout
    md = agreement_markdown(rep)
    assert md.count("same score") == 1


def test_bootstrap_cis_are_seeded_and_hold_the_estimate():
    import random

    from mtvbench.analysis.agreement import bootstrap_correlations

    r = random.Random(0)
    pairs = [(x, x + r.gauss(0, 0.2)) for x in (r.random() for _ in range(30))]
    cis = bootstrap_correlations(pairs, 300, seed=1)
    est = correlations([p[0] for p in pairs], [p[1] for p in pairs])
    for m in ("spearman", "kendall", "pearson"):
        lo, hi = cis[m]
        assert lo < est[m] < hi <= 1.0
    assert bootstrap_correlations(pairs, 300, seed=1) == cis and bootstrap_correlations(pairs, 300, seed=2) != cis
    assert bootstrap_correlations(pairs[:2], 300) == {"spearman": None, "kendall": None, "pearson": None}
    assert bootstrap_correlations(pairs, 0) == {"spearman": None, "kendall": None, "pearson": None}


def test_the_written_human_file_reads_back_and_its_fields_are_checked(tmp_path):
    from mtvbench.scoring.human import HumanRecord, human_agreement, human_jsonl
    from mtvbench.scoring.kappa import krippendorff_alpha_nominal

    recs = [HumanRecord(turn_id="object_reference/v/0#3", annotator=a, item=f"A{k}", verdict=v,
                        at="2025-01-01T00:00:00", seed=4, answer_digest="ab12")
            for a, verdicts in (("r1", "YYNY"), ("r2", "YNNY"), ("r3", "YYNN"))
            for k, v in enumerate(("Yes" if c == "Y" else "No" for c in verdicts), 1)]
    recs.append(HumanRecord(turn_id="memory_recall/v/1#2", annotator="r1", score=0.5))
    path = tmp_path / "h.jsonl"
    path.write_text(human_jsonl(recs))
    assert load_human(path) == recs
    assert '"rater": "r1"' in path.read_text() and '"item": "Q1"' in path.read_text()
    people, _, alpha, units = human_agreement(recs)
    assert people == 3 and units == 4
    assert alpha == pytest.approx(krippendorff_alpha_nominal([["Yes", "Yes", "Yes"], ["Yes", "No", "Yes"],
                                                             ["No", "No", "No"], ["Yes", "Yes", "No"]]))
    for rec, words in (({"annotator": "a", "rater": "b"}, "name different people"), ({"seed": -1}, "field 'seed'"),
                       ({"seed": 1.5}, "field 'seed'"), ({"at": 5}, "field 'at'"),
                       ({"answer_digest": "XYZ"}, "field 'answer_digest'")):
        path.write_text(json.dumps({"turn_id": "object_reference/v/0#3", "score": 1} | rec))
        with pytest.raises(AgreementError, match=words):
            load_human(path)
    path.write_text(json.dumps({"turn_id": "object_reference/v/0#3", "score": 1, "annotator": "a", "rater": "a"}))
    assert load_human(path)[0].annotator == "a"


def test_records_the_run_does_not_have_and_records_without_a_digest_are_counted_and_said(judged):
    """A record naming a turn the run lacks, an item its checklist lacks (A7 of five), or an item of an unknown
    turn is left out, counted and named under the table; records without ``answer_digest`` are taken as they are
    and counted. Turn and item records alike."""
    from typer.testing import CliRunner

    from mtvbench.cli import app
    from mtvbench.run.responses import judged_answer
    from mtvbench.scoring.human import answer_digest

    tmp, run_dir = judged
    run = RunDirectory.open(run_dir).load(bootstrap=0)
    d = run.dialogues[0]
    r = d.scored_turns[0]
    tid = d.turn_id(r.index)
    digest = answer_digest(judged_answer(d, r, run.responses))
    recs = [{"turn_id": tid, "rater": "ann1", "item": "Q1", "verdict": "Yes", "answer_digest": digest},
            {"turn_id": tid, "rater": "ann2", "item": "Q1", "verdict": "No"},
            {"turn_id": tid, "rater": "ann1", "item": "Q7", "verdict": "Yes", "answer_digest": digest},
            {"turn_id": "object_reference/nosuchvideo/0#3", "rater": "ann1", "item": "Q1", "verdict": "No"},
            {"turn_id": "object_reference/nosuchvideo/0#4", "rater": "ann1", "score": 40},
            {"turn_id": d.turn_id(d.scored_turns[1].index), "rater": "ann1", "score": 60}]
    path = tmp / "partly.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in recs))
    rep = agreement_report(path, [run_dir])
    row = rep.rows[0]
    assert row.records_not_in_run == 3 and row.not_in_run_example == f"{tid} A7"
    assert rep.human_records == 6 and rep.records_without_digest == 4
    res = CliRunner().invoke(app, ["agreement", "--human", str(path), str(run_dir), "--bootstrap", "0",
                                   "--format", "plain"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert f"3 of 6 human records (e.g. '{tid} A7')" in text and "naming a turn or checklist item" in text
    assert "4 of 6 human records name no answer_digest" in text
    full = tmp / "all_digests.jsonl"
    full.write_text(json.dumps(recs[0]) + "\n")
    quiet = CliRunner().invoke(app, ["agreement", "--human", str(full), str(run_dir), "--bootstrap", "0",
                                     "--format", "plain"], env={"COLUMNS": "300"})
    assert quiet.exit_code == 0 and "answer_digest" not in quiet.output and "does not have" not in quiet.output
