"""``report`` over a run of the paper's setting and an ablation run: the temporal grounding section."""

from __future__ import annotations

from pathlib import Path

from mtvbench.analysis.report import build_report
from mtvbench.run.evaluate import evaluate
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.run_helpers import cfg_for

GOOD = "The red square moves right and the blue circle stays; the square is red and the circle is blue."


def _run(data: Path, out: Path, cache: Path, reply: str, **kw) -> Path:
    with LoopbackServer(ServerState(model_reply=lambda prompt, n: reply)) as srv:
        evaluate(cfg_for(data, out, srv.url, cache, judge="offline", judge_runs=1, protocol="paper", **kw))
    return out


def test_report_compares_each_ablation_with_the_reference_run(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    ref = _run(data, tmp_path / "ref", tmp_path / "cache", "A video.")
    abl = _run(data, tmp_path / "clip", tmp_path / "cache", GOOD, sampling="clip", frame_timestamps="on")
    res = build_report([ref, abl], tmp_path / "rep", bootstrap=0)
    md = (tmp_path / "rep" / "grounding.md").read_text()
    assert "Temporal grounding ablations" in md
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    overall = next(line for line in lines if "| task | Overall |" in line)
    cells = [c.strip() for c in overall.split("|")]
    assert float(cells[7]) > 0  # Δ = ablation - reference, the ablation's answers are the better ones
    # no question of this dataset names a range: every dialogue in the "no range" bin; the videos are short
    assert any("| coverage | no range | 6 |" in line for line in lines)
    assert any("| video length | &lt; 2 min | 6 |" in line or "| video length | < 2 min | 6 |" in line
               for line in lines)
    assert "0.0% of its turns named a range" in md
    assert "Temporal grounding ablations" in (tmp_path / "rep" / "report.html").read_text()
    assert res.out == tmp_path / "rep"


def test_no_grounding_section_without_an_ablation_run(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    ref = _run(data, tmp_path / "ref", tmp_path / "cache", "A video.")
    build_report([ref], tmp_path / "rep", bootstrap=0)
    assert not (tmp_path / "rep" / "grounding.md").exists()
