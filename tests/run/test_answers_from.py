"""`mtvbench run --answers-from RUN_DIR --judge J --out RUN2` (issue 19): another judge on the same answers,
the model asked nothing (a loopback server counts every request), where the answers came from recorded;
resume, identity and INCOMPLETE as for any run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from mtvbench.run.evaluate import evaluate
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer
from tests.support.run_helpers import cfg_for, cli, judge_requests, model_requests, scores_of


def answers(run: Path) -> dict[str, str]:
    return {x["turn_id"]: x["answer"] for x in map(json.loads, (run / "responses.jsonl").read_text().splitlines())}


def test_answers_from_asks_the_model_nothing_and_judges_the_same_answers(dataset: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, tmp_path / "cache"))
        asked, judged = len(model_requests(srv.state)), len(judge_requests(srv.state))
        assert asked == 12 and judged == 24
        args = ["run", "--answers-from", str(a), "--judge", "openai:other-judge", "--judge-base-url", srv.url,
                "--judge-runs", "1", "--out", str(b), "--quiet"]
        res = cli(*args)
        assert res.exit_code == 0, res.output
        # the model: not one request; the other judge: one run per scored turn
        assert len(model_requests(srv.state)) == asked
        assert len(judge_requests(srv.state)) == judged + 12
        assert {r["body"]["model"] for r in judge_requests(srv.state)[judged:]} == {"other-judge"}
        # resume: nothing is asked again
        again = cli(*args)
        assert again.exit_code == 0, again.output
        assert len(model_requests(srv.state)) == asked and len(judge_requests(srv.state)) == judged + 12
    # the same answers, recorded with where they came from
    assert answers(b) == answers(a) and len(answers(b)) == 12
    cfg = yaml.safe_load((b / "config.yaml").read_text())
    assert cfg["answers_from"] == str(a) and cfg["judge"] == "openai:other-judge"
    assert cfg["model"] == "openai:test-model"
    assert cfg["frames"] == 4 and cfg["model_settings"]["base_url"] == srv.url  # the answers' settings are a's
    with sqlite3.connect(b / "store.sqlite") as db:
        inputs = [json.loads(x) for (x,) in db.execute("SELECT inputs FROM responses")]
    assert {i["answers_from"] for i in inputs} == {str(a)} and all(i["fingerprint"] for i in inputs)
    usage = scores_of(b)["usage"]
    assert usage["model"]["requests"] == 0 and usage["model"]["prompt_tokens"] == 0
    assert scores_of(b)["judge"] == "openai:other-judge"
    assert "answers: those stored in" in " ".join(res.output.split())


def test_the_answers_settings_are_the_source_runs(dataset: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, tmp_path / "cache"))
        res = cli("run", "--answers-from", str(a), "--judge", "offline", "--out", str(b), "--frames", "8", "--quiet")
        assert res.exit_code == 2 and "--frames: 8, but its answers were made with 4" in " ".join(res.output.split())
        assert not b.exists()
        res = cli("run", "--answers-from", str(tmp_path / "nothing"), "--judge", "offline", "--out", str(b), "--quiet")
        assert res.exit_code == 2 and "config.yaml: missing" in " ".join(res.output.split()) and not b.exists()
        res = cli("run", "--answers-from", str(a), "--judge", "offline", "--out", str(a), "--quiet")
        assert res.exit_code == 2 and "is the run directory --out names" in " ".join(res.output.split())
        ok = cli("run", "--answers-from", str(a), "--judge", "offline", "--judge-runs", "1", "--out", str(b),
                 "--quiet")
        assert ok.exit_code == 0, ok.output
        # the run directory belongs to stored answers: resuming it as a run that asks the model is refused
        n = len(model_requests(srv.state))
        res = cli("run", "--data", str(dataset), "--model", "openai:test-model", "--model-base-url", srv.url,
                  "--frames", "4", "--judge", "offline", "--judge-runs", "1", "--out", str(b), "--quiet")
        assert res.exit_code == 2 and "answers_from differ" in " ".join(res.output.split())
        assert len(model_requests(srv.state)) == n


def test_answers_the_source_lacks_leave_the_run_incomplete(dataset: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, tmp_path / "cache"))
    missing = sorted(answers(a))[0]
    with sqlite3.connect(a / "store.sqlite") as db:
        db.execute("DELETE FROM responses WHERE turn_id=?", (missing,))
    res = cli("run", "--answers-from", str(a), "--judge", "offline", "--judge-runs", "1", "--out", str(b), "--quiet")
    assert res.exit_code == 3, res.output
    s = scores_of(b)
    assert s["complete"] is False and s["counts"]["missing_responses"] == 1
    assert answers(b)[missing] is None and all(answers(b)[t] == v for t, v in answers(a).items() if t != missing)
    with sqlite3.connect(b / "store.sqlite") as db:
        (error,) = db.execute("SELECT error FROM responses WHERE turn_id=?", (missing,)).fetchone()
    assert f"{a} has no final answer to {missing}" in error


# --- issue 25, point 3: every setting given is used or refused; the model label is the source's ----------------

def two_per_task(root: Path) -> Path:
    """``root``'s dataset with a second dialogue per task (event index + 10): 12 dialogues, so --limit 1 leaves 6."""
    for mtqa in (root / "mtqa").glob("*.json"):
        data = json.loads(mtqa.read_text())
        ((video, [entry]),) = data.items()
        data[video].append({**entry, "event_index": entry["event_index"] + 10})
        mtqa.write_text(json.dumps(data))
        ck = root / "checklist" / f"{mtqa.stem}_CheckList.json"
        lists = json.loads(ck.read_text())
        lists[video][str(entry["event_index"] + 10)] = lists[video][str(entry["event_index"])]
        ck.write_text(json.dumps(lists))
    return root


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of 12 dialogues (two per task) against a loopback server, judged offline; made once for
    the module (the tests only read it: each writes its own --out)."""
    base = tmp_path_factory.mktemp("answers-source")
    dataset = two_per_task(make_dataset(base / "data"))
    a = base / "a"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, base / "cache", judge="offline", judge_runs=1))
    assert scores_of(a)["counts"]["dialogues"] == 12
    return a


#: a value for every flag of `run` and what --answers-from does with it: "used" (config.yaml of the new run records
#: it under the flag's key, or "out"/"judge" itself) or "refused" (one error naming the flag, nothing written).
#: A flag missing here fails test_every_run_flag_is_used_or_refused: a new flag cannot slip through.
GIVEN: dict[str, tuple[list[str], str]] = {
    "--data": (["{other}"], "refused"),
    "--model": (["openai:other"], "refused"),
    "--judge": (["offline"], "used"),
    "--out": (["{out}"], "used"),
    "--context": (["self"], "refused"),
    "--protocol": (["paper"], "used"),  # it asks what the source (authors) asked; a refusal: test_a_protocol_...
    "--frames": (["8"], "refused"),
    "--max-side": (["360"], "refused"),
    "--frame-size": (["32x32"], "refused"),
    "--jpeg-quality": (["50"], "refused"),
    "--sampling": (["clip"], "refused"),
    "--clip-share": (["0.25"], "refused"),
    "--frame-timestamps": (["on"], "refused"),
    "--judge-runs": (["2"], "used"),
    "--judge-max-attempts": (["2"], "used"),
    "--concurrency": (["3"], "used"),
    "--videos-in-flight": (["2"], "refused"),
    "--decode-workers": (["1"], "refused"),
    "--judge-concurrency": (["2"], "used"),
    "--cache-order": (["on"], "refused"),
    "--limit": (["1"], "used"),
    "--cache-dir": (["{other}"], "refused"),
    "--seed": (["7"], "used"),
    "--bootstrap": (["10"], "used"),
    "--tasks": (["OR"], "refused"),
    "--executor": (["ray"], "refused"),
    "--ray-address": (["auto"], "refused"),
    "--model-base-url": (["http://127.0.0.1:9/v1"], "refused"),
    "--judge-base-url": (["http://127.0.0.1:9/v1"], "used"),
    "--model-api-key-env": (["MTV_TEST_JUDGE_KEY"], "refused"),
    "--judge-api-key-env": (["MTV_TEST_JUDGE_KEY"], "used"),
    "--max-tokens": (["5"], "refused"),
    "--temperature": (["0.5"], "refused"),
    "--top-p": (["0.5"], "refused"),
    "--top-k": (["3"], "refused"),
    "--do-sample": (["true"], "refused"),
    "--repetition-penalty": (["1.1"], "refused"),
    "--presence-penalty": (["0.5"], "refused"),
    "--min-p": (["0.1"], "refused"),
    "--model-seed": (["3"], "refused"),
    "--system": (["be brief"], "refused"),
    "--ray-gpus": (["1"], "refused"),
    "--model-option": (["retry_base_s=0.5"], "refused"),
    "--judge-option": (["retry_base_s=0.5"], "used"),
}


def test_every_run_setting_is_classified() -> None:
    from mtvbench.config import RunConfig
    from mtvbench.run.flags import run_flags
    from mtvbench.run.replay import ANSWER_KEYS, ASKING_KEYS, OWN_KEYS

    groups = [set(ANSWER_KEYS), set(ASKING_KEYS), set(OWN_KEYS)]
    assert sum(map(len, groups)) == len(set().union(*groups)), "a setting in two groups"
    assert set().union(*groups) == set(RunConfig.model_fields)
    assert {f.name for f in run_flags()} == set(GIVEN)


@pytest.mark.parametrize("flag", sorted(GIVEN))
def test_every_run_flag_is_used_or_refused(flag: str, source: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from mtvbench.run.flags import run_flags

    monkeypatch.setenv("MTV_TEST_JUDGE_KEY", "not-a-real-key")
    b = tmp_path / "b"
    values, outcome = GIVEN[flag]
    args = [v.format(other=tmp_path / "other", out=b) for v in values]
    base = {"--judge": ["offline"], "--out": [str(b)]}
    base[flag] = args
    res = cli("run", "--answers-from", str(source), *[x for k, v in base.items() for x in (k, *v)], "--quiet")
    text = " ".join(res.output.split())
    if outcome == "refused":
        assert res.exit_code == 2, text
        assert f"{flag}:" in text or f"{flag} " in text, text
        assert "that run's" in text or "did not ask with that input" in text, text
        assert "Traceback" not in text and not b.exists()
        return
    assert res.exit_code == 0, text
    (key,) = {f.key for f in run_flags() if f.name == flag}
    recorded: object = yaml.safe_load((b / "config.yaml").read_text())
    for part in key.split("."):
        assert isinstance(recorded, dict)
        recorded = recorded[part]
    if flag == "--judge-option":  # a setting of its own given as an option: moved to its field
        assert yaml.safe_load((b / "config.yaml").read_text())["judge_settings"]["retry_base_s"] == 0.5
    else:
        assert str(recorded) == args[0] or recorded == yaml.safe_load(args[0]), (key, recorded)
    cfg = yaml.safe_load((b / "config.yaml").read_text())
    assert cfg["model"] == "openai:test-model" and cfg["frames"] == 4  # the source's, whatever was given


def test_the_model_label_is_the_sources(source: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    res = cli("run", "--answers-from", str(source), "--judge", "offline", "--out", str(b), "--model",
              "openai:other", "--quiet")
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "--model: \"openai:other\"" in text and '"openai:test-model"' in text, text
    assert not b.exists()
    # the same label is accepted (it agrees); the run's scores and config name the source's model
    ok = cli("run", "--answers-from", str(source), "--judge", "offline", "--out", str(b), "--model",
             "openai:test-model", "--quiet")
    assert ok.exit_code == 0, ok.output
    assert scores_of(b)["model"] == "openai:test-model"
    assert yaml.safe_load((b / "config.yaml").read_text())["model"] == "openai:test-model"


def test_settings_from_the_config_file_are_used_or_refused(source: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    bad = tmp_path / "judge.yaml"
    bad.write_text(yaml.safe_dump({"judge": "offline", "out": str(b), "model": "openai:other", "videos_in_flight": 9,
                                   "model_settings": {"temperature": 0.9}, "judge_runs": 1}))
    res = cli("run", "--answers-from", str(source), "--config", str(bad), "--quiet")
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    for key in ("model", "videos_in_flight", "model_settings.temperature"):
        assert f"{bad}: {key}:" in text, (key, text)
    assert "3 setting(s)" in text and not b.exists()
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"judge": "offline", "out": str(b), "judge_runs": 1, "seed": 5,
                                    "answers_from": str(source), "frames": 4}))
    ok = cli("run", "--config", str(good), "--quiet")
    assert ok.exit_code == 0, ok.output
    cfg = yaml.safe_load((b / "config.yaml").read_text())
    assert cfg["seed"] == 5 and cfg["judge_runs"] == 1 and cfg["answers_from"] == str(source)


def test_a_limited_run_says_how_many_of_the_dialogues(source: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    res = cli("run", "--answers-from", str(source), "--judge", "offline", "--out", str(b), "--limit", "1")
    assert res.exit_code == 0, res.output
    s = scores_of(b)
    assert s["counts"]["dialogues"] == 6 and s["dialogues_in_data"] == 12 and s["limit"] == 1
    assert "limit: 6 of 12 dialogues (--limit 1 per task)" in " ".join(res.output.split())
    again = cli("score", str(b), "--format", "plain")
    assert "limit: 6 of 12 dialogues" in " ".join(again.output.split())
    # the source's own limit is the default: without --limit the run judges every dialogue the source has
    full = cli("run", "--answers-from", str(source), "--judge", "offline", "--out", str(tmp_path / "c"), "--quiet")
    assert full.exit_code == 0 and scores_of(tmp_path / "c")["dialogues_in_data"] is None


def test_a_protocol_that_asks_other_turns_is_refused(dataset: Path, tmp_path: Path) -> None:
    """The authors' protocol reads a dialogue's rounds in file order, the paper's by index: with the rounds of a
    file out of order the two send the model other histories, so the source's answers do not fit the other one."""
    for mtqa in (dataset / "mtqa").glob("*.json"):
        data = json.loads(mtqa.read_text())
        ((video, [entry]),) = data.items()
        entry["mtqa"] = dict(reversed(list(entry["mtqa"].items())))
        mtqa.write_text(json.dumps(data))
    a, b = tmp_path / "a", tmp_path / "b"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, tmp_path / "cache", judge="offline", judge_runs=1, protocol="paper"))
    res = cli("run", "--answers-from", str(a), "--judge", "offline", "--out", str(b), "--protocol", "authors",
              "--quiet")
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "--protocol authors:" in text and "did not ask with that input" in text, text
    assert not b.exists()
    ok = cli("run", "--answers-from", str(a), "--judge", "offline", "--out", str(b), "--quiet")
    assert ok.exit_code == 0 and scores_of(b)["protocol"] == "paper"  # the source's, unless given
