"""``mtvbench estimate --data hf:NJU-LINK/MT-Video-Bench`` answers before the gated files are downloaded:
from the release's shape shipped as data (published totals, documented assumptions, every figure said to
come from the published statistics), with an empty Hub cache and no network; an assumed latency per backend
kind gives a time, ``--price`` a cost, and the judge's cost is given without ``--from-run``."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.data.release import LABEL, release_shape, shaped_benchmark
from tests.support.datasets import make_dataset

RELEASE = "hf:NJU-LINK/MT-Video-Bench"
JUDGE = "openai:gemini-2.5-flash"


@pytest.fixture
def offline_empty_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty Hugging Face cache, the Hub library offline, and no socket may connect anywhere."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-hf-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("MTVBENCH_CACHE", str(tmp_path / "mtv-cache"))

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("estimate reached for the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)


def _estimate(*args: str) -> dict:
    r = CliRunner().invoke(app, ["estimate", "--data", RELEASE, "--judge", JUDGE, "--format", "json", *args],
                           env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_shape_holds_the_published_totals() -> None:
    bench, videos = shaped_benchmark()
    published = release_shape().published
    assert len(bench.dialogues) == published.dialogues == 1000
    assert sum(len(d.rounds) for d in bench.dialogues) == published.qa_pairs == 5887
    assert len(videos) == len({d.video for d in bench.dialogues}) == 135
    assert round(published.qa_pairs / published.dialogues, 2) == published.turns_per_dialogue == 5.89
    assert all(d.scored_turns for d in bench.dialogues)  # every dialogue has something to judge


@pytest.mark.parametrize("model", ["qwen3-vl-8b-instruct@openai", "openai:gpt-4o", "gemini:gemini-2.5-pro"])
def test_the_release_is_estimated_with_an_empty_hub_cache_and_no_network(offline_empty_hub: None,
                                                                          model: str) -> None:
    est = _estimate("--model", model, "--price", "model=1.25,10,0.125", "--price", "judge=0.30,2.50,0.03")
    assert est["dialogues"] == 1000 and est["videos"] == 135 and est["source"] == LABEL
    m, j = est["model_role"], est["judge_role"]
    assert m["requests"] > 1000 and m["prompt_tokens"] > 1000 * 128
    assert j["requests"] == 3 * m["requests"] or j["requests"] > 1000  # three judge runs per scored turn
    assert est["seconds"] and "assumed" in est["latency_source"]  # a time, its latency said to be assumed
    assert j["cost"]["today"] is not None and j["cost"]["today"] > 0  # the judge's cost without --from-run
    assert "assumed" in j["completion_source"]
    assert any(LABEL in n for n in est["notes"]) and any(n.startswith("assumed") for n in est["notes"])


def test_the_table_says_where_its_figures_come_from(offline_empty_hub: None) -> None:
    r = CliRunner().invoke(app, ["estimate", "--data", RELEASE, "--judge", JUDGE, "--model", "openai:gpt-4o",
                                 "--format", "plain"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert f"1,000 dialogues over 135 videos ({LABEL})" in text
    assert "assumed (not published in text)" in text and "Traceback" not in r.output
    # said in words: no frame-settings key, the title above its lines
    assert "frames: 128 frames, longer side at most 720 px, JPEG quality 90" in text and "n128-m720" not in text
    assert r.stdout.splitlines()[0] == "Estimate (nothing was called)"


def test_a_latency_per_backend_kind_is_assumed_and_said_so(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    r = CliRunner().invoke(app, ["estimate", "--data", str(data), "--model", "openai:gpt-4o", "--judge", JUDGE,
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    est = json.loads(r.stdout)
    assert est["source"] is None  # read from the files
    assert est["seconds"] is not None and "assumed" in est["latency_source"]
    given = CliRunner().invoke(app, ["estimate", "--data", str(data), "--model", "openai:gpt-4o", "--judge", JUDGE,
                                     "--latency", "2", "--format", "json"])
    assert json.loads(given.stdout)["latency_source"] == "--latency"


@pytest.mark.parametrize("item", ["model=1", "model=a,b", "nobody=1,2", "judge=-1,2", "judge", "model=1,2,3,4",
                                  "judge=nan,1"])
def test_a_malformed_price_is_one_error_naming_it(tmp_path: Path, item: str) -> None:
    data = make_dataset(tmp_path / "data")
    r = CliRunner().invoke(app, ["estimate", "--data", str(data), "--model", "openai:gpt-4o", "--judge", JUDGE,
                                 "--price", item])
    assert r.exit_code == 2, r.output
    assert f"--price {item!r}" in r.output and "Traceback" not in r.output
