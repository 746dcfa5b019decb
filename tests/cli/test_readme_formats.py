"""The docs' file-format examples (docs/reference/formats.md) are accepted by the code that reads those files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.analysis.metadata import load_metadata_file, resolve_metadata
from mtvbench.cli import app
from mtvbench.data.official import load_benchmark
from mtvbench.scoring.human import load_human
from tests.support.datasets import make_dataset
from tests.support.runs import make_store_run

README = Path(__file__).resolve().parents[2] / "README.md"
FORMATS = Path(__file__).resolve().parents[2] / "docs" / "reference" / "formats.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _examples(heading: str) -> list[tuple[str, str]]:
    text = FORMATS.read_text(encoding="utf-8")
    start = text.index(f"\n### {heading}\n")
    end = text.find("\n##", start + 1)
    return [(m.group(1), m.group(2)) for m in _FENCE.finditer(text[start:end])]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("readme") / "data")


def test_human_file_examples(data: Path, tmp_path: Path) -> None:
    blocks = _examples("`agreement --human FILE`")
    assert [k for k, _ in blocks] == ["csv", "jsonl"]
    turns = {d.turn_id(r.index) for d in load_benchmark(data).dialogues for r in d.scored_turns}
    run = make_store_run(data, tmp_path / "run")
    for kind, body in blocks:
        f = tmp_path / f"human.{kind}"
        f.write_text(body)
        recs = load_human(f)
        assert len(recs) == len(body.strip().splitlines()) - (kind == "csv")
        assert {r.turn_id for r in recs} <= turns  # every example names a real turn of the layout
        r = CliRunner().invoke(app, ["agreement", "--human", str(f), str(run)])
        assert r.exit_code == 0, r.output


def test_metadata_file_examples(data: Path, tmp_path: Path) -> None:
    blocks = _examples("`report --metadata FILE`")
    assert [k for k, _ in blocks] == ["csv", "json"]
    bench = load_benchmark(data)
    for kind, body in blocks:
        f = tmp_path / f"meta.{kind}"
        f.write_text(body)
        assert load_metadata_file(f)
        meta = resolve_metadata(bench.dialogues, bench.videos, metadata_file=f)
        if kind == "csv":
            assert meta["object_reference/vid0/0"].scenes == 3 and meta["object_reference/vid0/0"].category == "Sports"
            assert meta["content_summary/vid0/2"].duration_s == 612.5 and meta["content_summary/vid0/2"].scenes is None
        else:
            assert meta["memory_recall/vid1/1"].scenes == 4 and meta["answer_refusal/vid1/3"].scenes == 2
            assert meta["proactive_interaction/vid1/5"].category == "Movie"
            assert meta["proactive_interaction/vid1/5"].duration_s == pytest.approx(570.0)


def test_readme_keeps_two_setup_commands_at_the_top() -> None:
    first = _FENCE.search(README.read_text(encoding="utf-8"))
    assert first is not None and len(first.group(2).strip().splitlines()) == 2
