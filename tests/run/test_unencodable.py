"""Text a server sends that UTF-8 cannot encode (lone surrogates, sent as the JSON escape ``\\ud800``) is made
storable where the record is made, counted and shown; every writer encodes what it is given; a failure or
a crash never leaves a scores.json that says ``complete`` next to files or a store it does not describe.

The runs are real: ``mtvbench run`` against the loopback OpenAI-compatible server, model and judge, with
the surrogates in the model's answer, its reasoning, the judge's reply (as a raw code point in the HTTP
body, and as an escape inside the JSON the judge writes, in a value and in a key) and an error body."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mtvbench.records import GenerationResult, JudgeVerdict
from mtvbench.run import store as store_module
from mtvbench.util.files import atomic_write_json, atomic_write_text
from mtvbench.util.storable import REPLACEMENT, encodable, encode_utf8, storable, storable_value
from tests.support.openai_server import Faults, LoopbackServer, ServerState, judge_reply
from tests.support.run_helpers import cli, cli_run, model_requests, scores_of, settings

#: every lone surrogate, high and low, at both ends of their ranges and inside
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud912"]


# the policy ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", SURROGATES)
def test_every_surrogate_is_replaced_and_counted_and_the_rest_kept(bad: str) -> None:
    text = f"ok {bad}é 😀 {bad}{bad}"
    clean, n = storable(text)
    assert n == 3 and clean == f"ok {REPLACEMENT}é 😀 {REPLACEMENT}{REPLACEMENT}"
    clean.encode("utf-8")  # storable now
    value, n = storable_value({f"A1{bad}": [f"Yes{bad}", (bad, "No")], "n": 3, "ok": None})
    assert n == 3 and json.dumps(value, ensure_ascii=False).encode("utf-8")
    assert value == {f"A1{REPLACEMENT}": [f"Yes{REPLACEMENT}", (REPLACEMENT, "No")], "n": 3, "ok": None}
    assert encode_utf8(text) == clean.encode("utf-8") and encode_utf8("plain") == b"plain"


#: where a string can sit in a JSON-like value: ``X`` is the string (a key, a value, in pairs, after a number, deep)
PLACES = ["X", ["X"], ["ok", "X"], [("A1", "X")], [("X", "Yes")], {"X": "Yes"}, {"A1": "X"}, [1, "X"], [None, ["X"]],
          [{"k": "X"}], {"k": [("A1", "ok"), ("A2", "X")]}, ("ok", "X"), {3: {"X": [1.5, "ok"]}}]


@pytest.mark.parametrize("place", PLACES, ids=repr)
def test_a_surrogate_is_replaced_wherever_it_sits_and_a_clean_value_is_kept(place: object) -> None:
    def put(value: object, s: str) -> object:
        if isinstance(value, str):
            return value.replace("X", s)
        if isinstance(value, (list, tuple)):
            return type(value)(put(v, s) for v in value)
        if isinstance(value, dict):
            return {put(k, s): put(v, s) for k, v in value.items()}
        return value

    for bad in SURROGATES:
        value, n = storable_value(put(place, f"x{bad}"))
        assert n == 1 and value == put(place, f"x{REPLACEMENT}")
        assert not encodable(put(place, f"x{bad}")) and not encodable([None, put(place, bad)])
    clean = put(place, "plain é 😀")
    assert storable_value(clean) == (clean, 0) and encodable(clean)


@pytest.mark.parametrize("bad", SURROGATES)
def test_a_value_is_kept_as_it_is_unless_it_holds_something_to_replace(bad: str) -> None:
    clean = {"k é": ["é 😀", ("x", 2.5)], 3: None, "deep": [[[{"a": "b"}]]]}
    assert storable_value(clean) == (clean, 0) and storable_value(["😀"]) == (["😀"], 0)
    marker = object()  # not JSON: the value is walked item by item, and a lone surrogate beside it still found
    value, n = storable_value([marker, {"k": f"x{bad}"}, (f"{bad}", 1)])
    assert n == 2 and value == [marker, {"k": f"x{REPLACEMENT}"}, (REPLACEMENT, 1)]


def test_records_are_storable_when_made_and_count_each_character_of_a_reply_once() -> None:
    res = GenerationResult(text="answer\ud800", raw_text="<think>x\udfff</think>answer\ud800", reasoning="x\udfff",
                           error="body \ud800", inputs={"k\ud800": "v"})
    assert res.replaced_characters == 2 + 1 + 1  # the reply's two, the error's, the inputs' key's
    assert "\ud800" not in res.model_dump_json() and res.text == "answer" + REPLACEMENT
    again = GenerationResult.model_validate_json(res.model_dump_json())
    assert again.replaced_characters == res.replaced_characters  # read back: not counted twice
    v = JudgeVerdict(run=0, status="ok", verdicts={"A1": "Yes"}, reply=[("A1\ud800", "Yes\ud800")],
                     raw=['{"A1\\ud800": "Yes\\ud800"}'], error=None, replaced_characters=1)
    assert v.replaced_characters == 3 and v.reply == [("A1" + REPLACEMENT, "Yes" + REPLACEMENT)]


def test_writers_encode_what_they_are_given(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "a.txt", "x\ud800")
    atomic_write_json(tmp_path / "b.json", {"k\udfff": "v\ud800"})
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "x" + REPLACEMENT
    assert json.loads((tmp_path / "b.json").read_text(encoding="utf-8")) == {"k" + REPLACEMENT: "v" + REPLACEMENT}


def test_the_store_writes_a_record_that_bypassed_validation(tmp_path: Path) -> None:
    from mtvbench.run.identity import ResultKey

    store = store_module.RunStore(tmp_path)
    res = GenerationResult(text="a").model_copy(update={"text": "a\ud800", "raw_text": "a\ud800"})  # not validated
    v = JudgeVerdict(run=0, status="error").model_copy(update={"error": "e\ud800", "raw": ["r\ud800"]})
    store.put_response("t#1", "prompt\ud800", res, ResultKey(fingerprint="f", parts={}))
    store.put_verdict("t#1", v, ResultKey(fingerprint="f", parts={}))
    assert store.responses()["t#1"]["text"] == "a" + REPLACEMENT
    assert store.verdict_rows()[0]["verdict"].raw == ["r" + REPLACEMENT]
    store.close()


# real runs ----------------------------------------------------------------------------------------------------

def _judge_escaped_in_json(prompt: str) -> str:
    """The judge writes the escape into its JSON text: valid JSON whose values (and one key) load as lone
    surrogates (the HTTP body itself is plain ASCII)."""
    obj = json.loads(judge_reply(prompt).split("```json\n")[1].split("\n```")[0])
    items = [(k + ("\\ud800" if i == 0 else ""), v + "\\ud800") for i, (k, v) in enumerate(obj.items())]
    return "```json\n{" + ", ".join(f'"{k}": "{v}"' for k, v in items) + "}\n```"


def _judge_raw_code_point(prompt: str) -> str:
    """A lone code point in the judge's content: the HTTP body carries it as ``\\udfff``."""
    return judge_reply(prompt).replace('"Yes"', '"Yes\udfff"').replace('"No"', '"No\udfff"')


CASES: dict[str, dict[str, Any]] = {
    "judge JSON value and key escaped": {"judge_reply": _judge_escaped_in_json},
    "judge content code point": {"judge_reply": _judge_raw_code_point},
    "model answer ends in one": {"model_reply": lambda text, n: "The red square moves right.\ud800"},
    "model reasoning holds one": {"model_reply": lambda text, n: "<think>hm\udbff</think>The red square."},
}


def _run(tmp_path: Path, state: ServerState, rerun_asks: int = 0, **kw: Any) -> tuple[Any, Any, Path, ServerState]:
    from tests.support.datasets import make_dataset

    data = make_dataset(tmp_path / "data")
    with LoopbackServer(state) as srv:
        values = settings(data, tmp_path / "run", srv.url, tmp_path / "cache", **kw)
        first = cli_run(values)
        asked = len(srv.state.requests)
        again = cli_run(values)
        assert len(srv.state.requests) == asked + rerun_asks  # nothing answered is paid for twice
    return first, again, tmp_path / "run", srv.state


@pytest.mark.parametrize("case", list(CASES))
def test_a_run_whose_replies_hold_lone_surrogates_is_stored_scored_and_counted(tmp_path: Path, case: str) -> None:
    first, again, run, state = _run(tmp_path, ServerState(**CASES[case]))
    for res in (first, again):
        assert res.exit_code == 0, res.output
        assert "replies with unencodable characters replaced:" in res.output and "Traceback" not in res.output
    with sqlite3.connect(run / "store.sqlite") as db:
        stored = db.execute("SELECT COUNT(*) FROM responses WHERE outcome='ok'").fetchone()[0]
        marked = db.execute("SELECT SUM(replaced_characters > 0) FROM responses").fetchone()[0]
        marked += db.execute("SELECT SUM(replaced_characters > 0) FROM verdicts").fetchone()[0]
    assert stored == len(model_requests(state))  # every answered call is stored
    s = scores_of(run)
    assert s["status"] == "complete" and s["counts"]["replies_with_replaced_characters"] == marked > 0
    assert s["counts"]["replaced_characters"] >= marked
    line = f"replies with unencodable characters replaced: {marked} "
    assert line in first.output
    scored = cli("score", run, "--format", "json")
    assert scored.exit_code == 0, scored.output
    fresh = json.loads(scored.stdout)
    for key in ("overall", "tasks", "counts", "status", "ci95"):
        assert fresh[key] == s[key], key  # score agrees with scores.json
    table = cli("score", run)
    assert table.exit_code == 0 and line in table.output
    lines = [json.loads(x) for x in (run / "responses.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) >= stored


def test_answers_taken_from_another_run_keep_their_count(tmp_path: Path) -> None:
    first, _, run, _ = _run(tmp_path, ServerState(**CASES["model answer ends in one"]))
    assert first.exit_code == 0
    res = cli("run", "--answers-from", run, "--judge", "offline", "--out", tmp_path / "again", "--quiet")
    assert res.exit_code == 0, res.output
    source, again = scores_of(run)["counts"], scores_of(tmp_path / "again")["counts"]
    assert again["replies_with_replaced_characters"] == source["replies_with_replaced_characters"] == 12
    assert "replies with unencodable characters replaced: 12 " in res.output


def test_an_error_body_with_a_lone_surrogate_is_stored_and_asked_again(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A 400 whose message holds a lone code point: stored as an error (asked again), never a crash."""
    import tests.support.openai_server as server
    from tests.support.datasets import make_dataset

    def plan(call: Any) -> str | None:
        return "bad_request_error" if not call.judge and call.ordinal == 1 else None

    monkeypatch.setattr(server, "BAD_REQUEST_ERROR", "Image inputs are not supported \ud800")
    data = make_dataset(tmp_path / "data")
    with LoopbackServer(ServerState(faults=Faults(plan=plan))) as srv:
        values = settings(data, tmp_path / "run", srv.url, tmp_path / "cache")
        first = cli_run(values)
        assert first.exit_code == 3, first.output  # a failed call: incomplete, asked again by the next run
        assert "internal error" not in first.output and "Traceback" not in first.output
        with sqlite3.connect(tmp_path / "run" / "store.sqlite") as db:
            errors = [e for (e,) in db.execute("SELECT error FROM responses WHERE outcome='error'")]
        assert len(errors) == 1 and REPLACEMENT in errors[0]
        asked = len(srv.state.requests)
        again = cli_run(values)
        assert again.exit_code == 0, again.output
        assert len(srv.state.requests) == asked + 3  # the failed turn again (1 model call, 2 judge runs), no more


# score files and crashes --------------------------------------------------------------------------------------

def test_a_failed_score_file_leaves_no_newer_scores_json(tmp_path: Path) -> None:
    first, _, run, _ = _run(tmp_path, ServerState())
    assert first.exit_code == 0
    (run / "scores.json").unlink()
    (run / "responses.jsonl").unlink()
    (run / "responses.jsonl").mkdir()  # this file cannot be written now
    res = cli("score", run)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert not (run / "scores.json").exists()  # written last: nothing says complete beside what failed


def test_a_run_that_crashes_leaves_no_scores_json_of_an_earlier_store(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.datasets import make_dataset

    data = make_dataset(tmp_path / "data")
    with LoopbackServer() as srv:
        values = settings(data, tmp_path / "run", srv.url, tmp_path / "cache", judge_runs=1)
        assert cli_run(values).exit_code == 0
        assert scores_of(tmp_path / "run")["status"] == "complete"
        put: Callable[..., None] = store_module.RunStore.put_verdict
        calls = []

        def crash_after_one(self: Any, *args: Any) -> None:
            calls.append(1)
            if len(calls) > 1:
                raise RuntimeError("simulated crash")
            put(self, *args)

        monkeypatch.setattr(store_module.RunStore, "put_verdict", crash_after_one)
        res = cli_run(values | {"judge_runs": 2})  # a second judge run of every turn: the store changes
    assert res.exit_code == 1 and calls  # the crash happened while the store changed
    assert not (tmp_path / "run" / "scores.json").exists()  # the earlier "complete" does not describe it
    monkeypatch.undo()
    res = cli("score", tmp_path / "run")
    assert res.exit_code == 3 and scores_of(tmp_path / "run")["status"] == "INCOMPLETE"


# what is read from a reply's JSON, and input files -----------------------------------------------------------

def test_json_read_from_a_reply_is_storable() -> None:
    """Construction stages and the checklist generator read JSON out of replies with ``json_values``."""
    from mtvbench.util.jsonio import extract_json_object, json_values

    text = 'Here: {"caption\\ud800": "a red square\\udfff"} and [ "x\\ud912" ]'
    assert extract_json_object(text) == {"caption" + REPLACEMENT: "a red square" + REPLACEMENT}
    assert [REPLACEMENT in json.dumps(v, ensure_ascii=False) for v in json_values(text, arrays=True)] == [True, True]


@pytest.mark.parametrize("where", ["question", "answer", "checklist key"])
def test_a_dataset_escaping_a_lone_surrogate_is_one_error_naming_the_field(tmp_path: Path, where: str) -> None:
    """Input files are refused, as bytes that are not UTF-8 are, naming the file and the field; a pair of
    surrogate escapes (one character) is text like any other."""
    from tests.support.datasets import make_dataset

    data = make_dataset(tmp_path / "data")
    folder = "checklist" if where == "checklist key" else "mtqa"
    f = sorted((data / folder).glob("*.json"))[0]
    obj = json.loads(f.read_text())
    for dialogues in obj.values():
        if folder == "checklist":  # a question key of the first checklist entry
            entry = next(iter(dialogues.values()))[0]
            entry["Q1\ud800"] = entry.pop("Q1")
        else:
            rnd = dialogues[0]["mtqa"]["Round 1"]
            rnd["User" if where == "question" else "Assistant"] += " \ud800 \ud83d\ude00"
        break
    f.write_text(json.dumps(obj))  # the escapes, as ensure_ascii writes them
    for args in (["validate", data], ["run", "--data", data, "--model", "oracle", "--judge", "offline",
                                      "--out", tmp_path / "run", "--quiet"]):
        res = cli(*args)
        assert res.exit_code == 2, res.output
        assert f.name in res.output and "lone surrogate" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "run").exists()
