from __future__ import annotations

import pytest

from mtvbench.analysis.sweep import plan_sweep, points_from_dirs, run_sweep, write_sweep_report
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer, ServerState


def test_plan_shares_equal_settings(tmp_path):
    plan = plan_sweep({"data": tmp_path, "model": "oracle", "judge": "offline", "cache_dir": tmp_path / "c"},
                      tmp_path / "sw", frames=[64, 128], max_sides=[720, 960], contexts=["golden", "self"])
    dirs = {(axis, v): cfg.out.name for axis, v, cfg in plan}
    assert dirs[("frames", "128")] == dirs[("max_side", "720")] == dirs[("context", "golden")] == "f128-m720-golden"
    assert dirs[("frames", "64")] == "f64-m720-golden" and dirs[("context", "self")] == "f128-m720-self"
    assert all(cfg.cache_dir == tmp_path / "c" for _, _, cfg in plan)


def test_sweep_runs_each_setting_once_and_resumes(tmp_path):
    data = make_dataset(tmp_path / "data")
    base = {"data": data, "model": "openai:m", "judge": "offline", "judge_runs": 1, "cache_dir": tmp_path / "cache",
            "bootstrap": 0, "model_settings": {"base_url": None, "extra": {"retry_base_s": 0.01}}}

    def reply(prompt: str, n_images: int) -> str:  # more frames, more facts: scores rise with frames
        return ("The red square moves right and the blue circle stays. " if n_images >= 4 else "") + "A video."

    state = ServerState(model_reply=reply)
    with LoopbackServer(state) as srv:
        base["model_settings"]["base_url"] = srv.url
        pts = run_sweep(base, tmp_path / "sw", frames=[2, 128], contexts=["golden", "none"])
        n_first = len(state.requests)
        # 3 distinct settings (f128 golden is shared by both axes) x 12 scored turns asked
        assert n_first == 3 * 12
        assert len({p.run_dir for p in pts}) == 3
        again = run_sweep(base, tmp_path / "sw", frames=[2, 128], contexts=["golden", "none"])
        assert len(state.requests) == n_first  # resumed: nothing asked again
    assert [p.scores.overall for p in pts] == [p.scores.overall for p in again]
    fr = {p.value: p.scores.overall for p in pts if p.axis == "frames"}
    assert fr["128"] > fr["2"]
    files = write_sweep_report(pts, tmp_path / "sw", model="m")
    names = {f.name for f in files}
    assert {"sweep.md", "sweep.csv", "sweep_frames.png", "sweep_context.png", "sweep.html"} <= names
    md = (tmp_path / "sw" / "sweep.md").read_text()
    assert "Number of frames" in md and "| 2 |" in md and "| none |" in md
    reread = points_from_dirs(tmp_path / "sw")
    assert {(p.axis, p.value) for p in reread} >= {("frames", "2"), ("frames", "128"), ("context", "none")}
    assert pytest.approx(fr["128"]) == next(p.scores.overall for p in reread if (p.axis, p.value) == ("frames", "128"))


def test_sweep_takes_runs_settings_flags_derived_from_the_run_settings():
    from typer.testing import CliRunner

    from mtvbench.cli import app
    from mtvbench.run.flags import SWEPT, run_flags, sweep_flags

    names = {f.name for f in sweep_flags()}
    assert names == {f.name for f in run_flags() if f.key not in SWEPT}  # no hand-written copy
    assert {"--top-k", "--repetition-penalty", "--model-option", "--judge-option", "--model-api-key-env"} <= names
    out = CliRunner().invoke(app, ["sweep", "--help"], env={"COLUMNS": "300"}).output
    for name in ("--config", "--top-k", "--model-option", "--judge-option", "--max-tokens", "--frames", "--out"):
        assert name in out


def test_sweep_with_a_config_model_options_and_generation_flags(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from mtvbench.cli import app

    data = make_dataset(tmp_path / "data")
    with LoopbackServer() as srv:
        cfg = tmp_path / "base.yaml"
        cfg.write_text(yaml.safe_dump({"data": str(data), "model": "openai:m", "judge": "offline", "judge_runs": 1,
                                       "bootstrap": 0, "cache_dir": str(tmp_path / "cache"),
                                       "model_settings": {"base_url": srv.url, "top_p": 0.5}}))
        res = CliRunner().invoke(app, ["sweep", "--config", str(cfg), "--out", str(tmp_path / "sw"), "--frames", "2,4",
                                       "--limit", "1", "--top-k", "7", "--temperature", "0.2",
                                       "--model-option", "retry_base_s=0.01", "--model-option", "extra_body={x: 1}",
                                       "--format", "csv"])
        bodies = [r["body"] for r in srv.state.requests]
    assert res.exit_code == 0, res.output
    assert len(bodies) == 2 * 12
    assert all((b["top_k"], b["temperature"], b["top_p"], b["x"]) == (7, 0.2, 0.5, 1) for b in bodies)
    assert sorted(p.name for p in (tmp_path / "sw").iterdir() if p.is_dir()) == ["f2-m720-golden", "f4-m720-golden"]
    bad = CliRunner().invoke(app, ["sweep", "--config", str(cfg), "--out", str(tmp_path / "sw2"), "--frames", "2",
                                   "--temperature", "-1", "--top-k", "none"])
    assert bad.exit_code == 2 and "--temperature: must be a number >= 0" in bad.output
    assert not (tmp_path / "sw2").exists()


def test_grounding_grid_runs_each_pair_and_reports_paired_differences(tmp_path):
    """--sampling uniform,clip x --frame-timestamps off,on: four runs, each its own identity and folder; the
    table gives every setting with its paired difference from uniform/off; a re-read sweep finds the grid."""
    from mtvbench.analysis.sweep import sweep_tables

    data = make_dataset(tmp_path / "data")
    base = {"data": data, "model": "openai:m", "judge": "offline", "judge_runs": 1, "cache_dir": tmp_path / "cache",
            "bootstrap": 0, "protocol": "paper", "frames": 4,
            "model_settings": {"base_url": None, "extra": {"retry_base_s": 0.01}}}

    def reply(prompt: str, n_images: int) -> str:
        return "The red square moves right and the blue circle stays."

    state = ServerState(model_reply=reply)
    with LoopbackServer(state) as srv:
        base["model_settings"]["base_url"] = srv.url
        pts = run_sweep(base, tmp_path / "sw", samplings=["uniform", "clip"], timestamps=["off", "on"])
    assert [p.value for p in pts] == ["uniform/off", "uniform/on", "clip/off", "clip/on"]
    assert len({p.run_dir for p in pts}) == 4 and len(state.requests) == 4 * 12
    with_labels = [r for r in state.requests if any(part.get("text", "").startswith("Frame at ")
                                                    for m in r["body"]["messages"] if isinstance(m["content"], list)
                                                    for part in m["content"])]
    assert len(with_labels) == 2 * 12  # the two timestamp settings' turns
    assert {p.scores.ablations == [] for p in pts} == {True, False}
    (table,) = sweep_tables(pts)
    rows = {r[0]: r for r in table.rows}
    cols = [c.name for c in table.columns]
    assert rows["uniform/off"][cols.index("Δ Overall")] is None
    assert rows["clip/on"][cols.index("Δ Overall")] == pytest.approx(0.0)
    assert rows["clip/on"][cols.index("named range %")] == 0.0  # no question of this dataset names a range
    reread = points_from_dirs(tmp_path / "sw")
    assert sorted(p.value for p in reread if p.axis == "grounding") == sorted(p.value for p in pts)
    write_sweep_report(pts, tmp_path / "sw", model="m")
    assert "Temporal grounding" in (tmp_path / "sw" / "sweep.md").read_text()
