"""`mtvbench review export` on a released-layout dataset, and the review commands' input checks."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.data.official import load_official
from mtvbench.review.decisions import Edit
from mtvbench.review.source import open_source
from mtvbench.review.store import ReviewStore

runner = CliRunner()


def _decide(sample: Path) -> tuple[list[str], str]:
    """Item 0 accepted, 1 revised by the senior, 2 rejected, 3 waiting for the senior, the rest pending."""
    source = open_source(sample)
    items = source.load()
    st = ReviewStore(source.default_store)
    st.sync(items)
    a, b, c, d = items[:4]
    st.record(a, "ann1", "accept")
    st.record(a, "ann2", "accept")
    k = min(b.checklists)
    q = b.checklists[k][0]
    new_q = q.question.replace("Does the model", "Does the answer") + " <b>&</b>"
    edit = Edit(round=k, field="question", item=q.key, value=new_q)
    st.record(b, "ann1", "accept")
    st.record(b, "ann2", "revise", [edit, Edit(round=1, field="user", value="Which shapes appear first?")])
    st.adjudicate(b, "lead", "revise", [edit], "only the checklist fix")
    st.record(c, "ann1", "reject", comment="not grounded")
    st.record(c, "ann2", "reject", comment="ambiguous")
    st.record(d, "ann1", "accept")
    st.record(d, "ann2", "reject", comment="x")
    return [a.id, b.id, c.id, d.id], new_q


def test_export_applies_revisions_and_writes_the_audit_trail(sample: Path, tmp_path: Path) -> None:
    ids, new_q = _decide(sample)
    out = tmp_path / "reviewed"
    r = runner.invoke(app, ["review", "export", str(sample), "--out", str(out)])
    assert r.exit_code == 3, r.output  # pending and disputed dialogues were exported unverified
    assert "INCOMPLETE review: 10 dialogue(s)" in r.output
    bench, problems = load_official(out)
    assert bench is not None, [p.render() for p in problems]
    got = {d.id for d in bench.dialogues}
    assert len(got) == 12 and ids[2] not in got  # every dialogue but the rejected one
    revised = bench.dialogue(ids[1])
    assert any(c.question == new_q for r_ in revised.rounds for c in (r_.checklist or []))
    assert revised.rounds[0].user != "Which shapes appear first?"  # ann2's other edit was not taken by the senior
    audit = json.loads((out / "review.json").read_text())
    assert audit["format"] == "mtvbench-review-audit" and audit["complete"] is False
    assert audit["counts"] == {"accepted": 2, "rejected": 1, "needs_adjudication": 1, "pending": 9}
    by_id = {i["id"]: i for i in audit["items"]}
    assert by_id[ids[1]]["changes"][0]["after"] == new_q and by_id[ids[1]]["changes"][0]["before"] != new_q
    assert by_id[ids[1]]["adjudication"]["annotator"] == "lead"
    assert [x["annotator"] for x in by_id[ids[2]]["reviews"]] == ["ann1", "ann2"] and not by_id[ids[2]]["exported"]
    assert [(h["who"], h["decision"]) for h in audit["history"]][:2] == [("ann1", "accept"), ("ann2", "accept")]
    assert len(audit["history"]) == 9
    # the source is untouched
    assert new_q not in (sample / "checklist").joinpath("object_reference_CheckList.json").read_text()


def test_accepted_only(sample: Path, tmp_path: Path) -> None:
    ids, _ = _decide(sample)
    out = tmp_path / "accepted"
    r = runner.invoke(app, ["review", "export", str(sample), "--out", str(out), "--accepted-only",
                            "--video-mode", "copy"])
    assert r.exit_code == 3 and "left out" in r.output
    bench, _ = load_official(out)
    assert bench is not None and {d.id for d in bench.dialogues} == set(ids[:2])
    assert sorted(p.name for p in (out / "videos").iterdir()) == sorted({f"{d.video}.mp4" for d in bench.dialogues})
    # exporting again replaces the earlier export
    r = runner.invoke(app, ["review", "export", str(sample), "--out", str(out), "--accepted-only"])
    assert r.exit_code == 3 and not list(tmp_path.glob(".accepted.*"))


def test_export_complete_review_exits_zero(sample: Path, tmp_path: Path) -> None:
    source = open_source(sample)
    st = ReviewStore(source.default_store)
    items = source.load()
    st.sync(items)
    for it in items:
        st.record(it, "ann1", "accept")
        st.record(it, "ann2", "accept")
    r = runner.invoke(app, ["review", "export", str(sample), "-o", str(tmp_path / "all")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "all" / "review.json").read_text())["complete"] is True


def test_export_refuses_to_overwrite(sample: Path, tmp_path: Path) -> None:
    for out in (sample, sample / "inner", sample.parent):
        r = runner.invoke(app, ["review", "export", str(sample), "--out", str(out)])
        assert r.exit_code == 2 and "overwrite the data under review" in r.output, r.output
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    r = runner.invoke(app, ["review", "export", str(sample), "--out", str(other)])
    assert r.exit_code == 2 and "not empty" in r.output and (other / "notes.txt").read_text() == "mine"
    r = runner.invoke(app, ["review", "export", str(sample), "--out", str(tmp_path / "x"), "--video-mode", "move"])
    assert r.exit_code == 2 and "--video-mode" in r.output


def test_video_mode_symlink_is_gone_and_every_export_validates(sample: Path, tmp_path: Path) -> None:
    """`--video-mode symlink` (a data root holds no link) is one error naming the modes, and nothing is written;
    the exports validate and hold no link."""
    for cmd in (["review", "export", str(sample)], ["build", "export", "-w", str(tmp_path / "ws")]):
        r = runner.invoke(app, [*cmd, "--out", str(tmp_path / "o"), "--video-mode", "symlink"])
        assert r.exit_code == 2, r.output
        assert r.output.count("error:") == 1 and "--video-mode must be link or copy, got 'symlink'" in r.output
        assert "Traceback" not in r.output and not (tmp_path / "o").exists() and not (tmp_path / "ws").exists()
    for mode in ("link", "copy"):
        out = tmp_path / mode
        r = runner.invoke(app, ["review", "export", str(sample), "--out", str(out), "--video-mode", mode])
        assert r.exit_code == 3, r.output  # nothing reviewed yet: exported unverified
        assert not [p for p in out.rglob("*") if p.is_symlink()]
        v = runner.invoke(app, ["validate", str(out)])
        assert v.exit_code == 0, v.output
        vid = next((out / "videos").iterdir())
        same = vid.stat().st_ino == (sample / "videos" / vid.name).stat().st_ino
        assert same == (mode == "link")


def test_separate_store_leaves_the_dataset_untouched(sample: Path, tmp_path: Path) -> None:
    store = tmp_path / "elsewhere.sqlite"
    r = runner.invoke(app, ["review", "add-user", str(sample), "ann1", "--store", str(store)])
    assert r.exit_code == 0, r.output
    assert store.exists() and not (sample / "review.sqlite").exists()


def test_add_user_prints_a_login_link_once(sample: Path) -> None:
    r = runner.invoke(app, ["review", "add-user", str(sample), "lead", "--job", "senior", "--url",
                            "http://10.0.0.5:9000/"])
    assert r.exit_code == 0, r.output
    link = next(line for line in r.output.splitlines() if line.startswith("http"))
    assert link.startswith("http://10.0.0.5:9000/#token=")
    token = link.split("#token=")[1]
    assert ReviewStore(sample / "review.sqlite").authenticate(token).job == "senior"
    again = runner.invoke(app, ["review", "add-user", str(sample), "lead", "--job", "senior"])
    assert again.exit_code == 2 and "exists already" in again.output and "--replace" in again.output
    bad = runner.invoke(app, ["review", "add-user", str(sample), "  ", "--job", "senior"])
    assert bad.exit_code == 2 and "name is empty" in bad.output
    bad = runner.invoke(app, ["review", "add-user", str(sample), "x", "--job", "boss"])
    assert bad.exit_code == 2 and "--job" in bad.output
    listed = runner.invoke(app, ["review", "users", str(sample)])
    assert "lead" in listed.output and "senior" in listed.output and token not in listed.output


def test_serve_refuses_other_hosts_without_users(sample: Path) -> None:
    r = runner.invoke(app, ["review", "serve", str(sample), "--host", "0.0.0.0", "--port", "0"])
    assert r.exit_code == 2 and "refusing to serve on 0.0.0.0 without access tokens" in r.output
    assert "Traceback" not in r.output


def test_not_a_review_source(tmp_path: Path) -> None:
    r = runner.invoke(app, ["review", "serve", str(tmp_path)])
    assert r.exit_code == 2 and "neither a build workspace" in r.output
    r = runner.invoke(app, ["review", "export", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "not a folder" in r.output


def test_guidelines_file_errors_are_clear(sample: Path, tmp_path: Path) -> None:
    for name, content, msg in (("missing.md", None, "cannot read it"), ("latin.md", b"caf\xe9", "not UTF-8 text"),
                               ("big.md", b"x" * (300 * 1024), "larger than 256 KiB")):
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        r = runner.invoke(app, ["review", "serve", str(sample), "--guidelines", str(path), "--port", "0"])
        assert r.exit_code == 2 and f"--guidelines {path}: {msg}" in r.output and "Traceback" not in r.output, r.output


def test_the_audit_trail_keeps_criteria_marks_and_referrals(sample: Path, tmp_path: Path) -> None:
    from mtvbench.review.decisions import CRITERIA, Criterion

    source = open_source(sample)
    items = source.load()
    st = ReviewStore(source.default_store)
    st.sync(items)
    it = items[0]
    key = it.checklist_keys()[0]
    unmet = {c: Criterion(met=c != "grounded", note="<script>x</script>" if c == "grounded" else "") for c in CRITERIA}
    st.record(it, "ann1", "reject", [], "not grounded", criteria=unmet, checklist={key: "revise"}, strict=True)
    st.record(it, "ann2", "accept", criteria={c: Criterion(met=True) for c in CRITERIA}, strict=True)
    st.record(it, "ann3", "accept", criteria={c: Criterion(met=True) for c in CRITERIA}, strict=True, refer=True)
    out = tmp_path / "exp"
    assert runner.invoke(app, ["review", "export", str(sample), "--out", str(out)]).exit_code == 3
    audit = json.loads((out / "review.json").read_text())
    assert audit["version"] == 2 and list(audit["criteria"]) == list(CRITERIA)
    (item,) = [i for i in audit["items"] if i["id"] == it.id]
    assert item["reviews"][0]["criteria"]["grounded"] == {"met": False, "note": "<script>x</script>"}
    assert item["reviews"][0]["checklist"][key] == "revise" and item["status"] == "needs_adjudication"
    assert [(r["annotator"], r["reason"]) for r in item["referrals"]] == [("ann3", "taken")]
    assert [(h["who"], h["action"]) for h in audit["history"]] == [("ann1", "review"), ("ann2", "review"),
                                                                   ("ann3", "refer")]
    assert audit["history"][0]["criteria"]["grounded"]["met"] is False
