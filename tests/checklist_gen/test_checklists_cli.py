from __future__ import annotations

import json

from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer, ServerState

runner = CliRunner()

GOOD = {"Q1": "Does the model say the square is red?", "A1": "Yes",
        "Q2": "Does the model say the square moves right?", "A2": "Yes",
        "Q3": "Does the model say the circle is blue?", "A3": "Yes",
        "Q4": "Does the model say the circle stays?", "A4": "Yes",
        "Q5": "Does the model say the square is green?", "A5": "No"}
# breaks the rules: two "No" items and a question that is not self-contained
BAD = dict(GOOD, A4="No", Q2="Does the answer match the ground truth?")


def _reply(always_bad: bool):
    def reply(prompt: str, n_images: int) -> str:
        if always_bad or "rejected" not in prompt:
            return "```json\n" + json.dumps(BAD) + "\n```"
        return json.dumps(GOOD)
    return reply


def _entries(data, stem):
    return json.loads((data / "checklist" / f"{stem}_CheckList.json").read_text())


def test_checklists_reasks_until_rules_hold_and_keeps_existing(tmp_path):
    data = make_dataset(tmp_path / "data")
    before = _entries(data, "object_reference")
    state = ServerState(model_reply=_reply(always_bad=False))
    with LoopbackServer(state) as srv:
        r = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                "--model-base-url", srv.url, "--in-place"])
    assert r.exit_code == 0, r.output
    # TS and PI: every round is a model turn; rounds 1, 2, 4 lacked a checklist -> 6 generated
    assert "generated 6" in r.output
    assert _entries(data, "object_reference") == before  # nothing to do there; untouched
    ts = _entries(data, "topic_shifting")["vid0"]["4"]
    assert sorted(e["round index"] for e in ts) == [1, 2, 3, 4, 5]
    new = next(e for e in ts if e["round index"] == 2)
    answers = [new[f"A{i}"] for i in range(1, 6)]
    assert answers.count("No") == 1 and answers.count("Yes") == 4 and "Q6" not in new
    assert "ground truth" not in json.dumps(new).lower()
    assert len(state.requests) == 12  # each turn: one rejected reply, one accepted
    # resumable: a second run asks nothing
    with LoopbackServer(ServerState(model_reply=_reply(False))) as srv2:
        r2 = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                 "--model-base-url", srv2.url, "--in-place"])
        assert r2.exit_code == 0 and "generated 0" in r2.output
        assert srv2.state.requests == []


def test_checklists_lists_failures_after_bounded_reasks(tmp_path):
    data = make_dataset(tmp_path / "data")
    state = ServerState(model_reply=_reply(always_bad=True))
    with LoopbackServer(state) as srv:
        r = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen", "--model-base-url", srv.url,
                                "--max-attempts", "2", "--in-place"])
    assert r.exit_code == 3  # finished but incomplete
    out = " ".join(r.output.split())
    assert "failed 6" in out and "ground truth" in out
    assert len(state.requests) == 12  # bounded: 2 asks per turn
    ts = _entries(data, "topic_shifting")["vid0"]["4"]
    assert sorted(e["round index"] for e in ts) == [3, 5]  # failures are not written


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_checklists_without_out_or_in_place_refuses_and_writes_nothing(tmp_path):
    data = make_dataset(tmp_path / "data")
    before = _tree(data)
    with LoopbackServer(ServerState(model_reply=_reply(False))) as srv:
        r = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                "--model-base-url", srv.url])
        both = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                   "--model-base-url", srv.url, "--in-place", "--out", str(tmp_path / "o")])
        same = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                   "--model-base-url", srv.url, "--out", str(data)])
        assert srv.state.requests == []
    assert r.exit_code == 2 and "--out DIR" in r.output and "--in-place" in r.output
    assert "Traceback" not in r.output
    assert both.exit_code == 2 and "exclude each other" in both.output
    assert same.exit_code == 2 and "--in-place" in same.output
    assert _tree(data) == before and not (tmp_path / "o").exists()


def test_checklists_out_writes_a_complete_copy_and_resumes(tmp_path):
    from mtvbench.data.official import load_official

    data = make_dataset(tmp_path / "data")
    before = _tree(data)
    out = tmp_path / "with-checklists"
    with LoopbackServer(ServerState(model_reply=_reply(False))) as srv:
        r = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                "--model-base-url", srv.url, "--out", str(out)])
        n_first = len(srv.state.requests)
        r2 = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                 "--model-base-url", srv.url, "--out", str(out)])
        n_second = len(srv.state.requests)
    assert r.exit_code == 0, r.output
    assert "generated 6" in r.output and str(out) in " ".join(r.output.split())
    assert _tree(data) == before  # the source dataset is untouched
    assert r2.exit_code == 0 and "generated 0" in r2.output and n_second == n_first  # resumable from --out
    # videos are hard links (a data root holds no symbolic link): no second copy, and the loader accepts them
    assert not (out / "videos").is_symlink()
    assert [(v.name, v.stat().st_ino) for v in sorted((out / "videos").iterdir())] == [
        (v.name, v.stat().st_ino) for v in sorted((data / "videos").iterdir())]
    for f in (data / "mtqa").iterdir():
        assert (out / "mtqa" / f.name).read_bytes() == f.read_bytes()
    # untouched tasks are copied as they are; the out folder is a dataset the loader accepts
    assert (out / "checklist" / "object_reference_CheckList.json").read_bytes() == \
        (data / "checklist" / "object_reference_CheckList.json").read_bytes()
    ts = json.loads((out / "checklist" / "topic_shifting_CheckList.json").read_text())["vid0"]["4"]
    assert sorted(e["round index"] for e in ts) == [1, 2, 3, 4, 5]
    bench, problems = load_official(out)
    assert bench is not None, [p.render() for p in problems]
    assert all(r.checklist for d in bench.dialogues for r in d.model_turns)


def test_checklists_refuses_a_data_root_holding_a_link(tmp_path):
    """The one rule of data roots holds here too (checklists reads a dataset without loading it whole)."""
    data = make_dataset(tmp_path / "data")
    (data / "videos").rename(tmp_path / "videos")
    (data / "videos").symlink_to(tmp_path / "videos", target_is_directory=True)
    with LoopbackServer(ServerState(model_reply=_reply(False))) as srv:
        r = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                "--model-base-url", srv.url, "--out", str(tmp_path / "out")])
        assert srv.state.requests == []
    assert r.exit_code == 2 and "videos: is a symbolic link" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()


def test_checklists_out_refuses_a_folder_holding_another_dataset(tmp_path):
    data = make_dataset(tmp_path / "data")
    other = tmp_path / "other"
    (other / "mtqa").mkdir(parents=True)
    (other / "mtqa" / "object_reference.json").write_text("{}")
    with LoopbackServer(ServerState(model_reply=_reply(False))) as srv:
        r = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                "--model-base-url", srv.url, "--out", str(other)])
        assert srv.state.requests == []
    assert r.exit_code == 2 and "another dataset" in " ".join(r.output.split())
    assert (other / "mtqa" / "object_reference.json").read_text() == "{}"
