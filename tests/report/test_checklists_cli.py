from __future__ import annotations

import json

from typer.testing import CliRunner

from mtvbench.cli import app
from tests.conftest import make_dataset
from tests.servers.openai_server import LoopbackServer, ServerState

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
        r = runner.invoke(app, ["checklists", "--data", str(data), "--generator", "openai:gen",
                                "--base-url", srv.url])
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
        r2 = runner.invoke(app, ["checklists", "--data", str(data), "--generator", "openai:gen",
                                 "--base-url", srv2.url])
        assert r2.exit_code == 0 and "generated 0" in r2.output
        assert srv2.state.requests == []


def test_checklists_lists_failures_after_bounded_reasks(tmp_path):
    data = make_dataset(tmp_path / "data")
    state = ServerState(model_reply=_reply(always_bad=True))
    with LoopbackServer(state) as srv:
        r = runner.invoke(app, ["checklists", "--data", str(data), "--generator", "openai:gen", "--base-url", srv.url,
                                "--max-attempts", "2"])
    assert r.exit_code == 1
    out = " ".join(r.output.split())
    assert "failed 6" in out and "ground truth" in out
    assert len(state.requests) == 12  # bounded: 2 asks per turn
    ts = _entries(data, "topic_shifting")["vid0"]["4"]
    assert sorted(e["round index"] for e in ts) == [3, 5]  # failures are not written
