"""report.html reads well: text columns align left and numbers right, a plot's legend covers no bar or point,
and a breakdown whose every value is unknown is left out with one line saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

import mtvbench.render.plots as plots
from mtvbench.analysis.report import build_report
from mtvbench.render.html import html_table, text_columns
from tests.support.datasets import make_dataset
from tests.support.runs import make_store_run


@pytest.mark.parametrize(("row", "text"), [
    (["gpt-4o", "62.96", "authors", "80.10 (13)", "– (0)", "complete"], {0, 2, 5}),
    (["a", "12,345", "-1.5", "–", "3e-4", "40%"], {0}),
    (["x", "openai:gpt-4o", "n128-m720-q90", "Qwen3-VL"], {0, 1, 2, 3}),
])
def test_text_columns_align_left_and_numbers_right(row: list[str], text: set[int]) -> None:
    assert text_columns([row]) == text
    page = html_table([f"h{j}" for j in range(len(row))], [row])
    for j, cell in enumerate(row):
        assert (f'<td class="t">{cell}</td>' in page) == (j in text), cell
    assert text_columns([["<b>62.5</b>", "<i>gpt</i>"]], raw=True) == {1}


@pytest.mark.parametrize("kind", ["bars", "line"])
def test_a_plots_legend_covers_no_bar_or_point(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    figures = []

    def keep(fig) -> bytes:  # type: ignore[no-untyped-def]
        fig.tight_layout()  # as the real _png does before saving
        fig.canvas.draw()
        figures.append(fig)
        return b""

    monkeypatch.setattr(plots, "_png", keep)
    series = {f"run {i}": [100.0, 95.0, 99.0, 100.0] for i in range(4)}  # full bars: a legend inside covers one
    if kind == "bars":
        plots.grouped_bars(["OR", "MR", "CS", "AR"], series, title="t")
    else:
        plots.line_plot(["1", "2", "3", "4"], series, title="t", xlabel="x", ylabel="y", counts=[1, 2, 3, 4],
                        ylim=(0, 100))
    fig = figures[0]
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        for other in fig.axes:  # beside the plot, not over it
            assert not box.overlaps(other.get_window_extent(renderer)), (box, other.get_window_extent(renderer))
        assert box.x1 <= fig.bbox.x1 + 1, (box, fig.bbox)  # and inside the picture


def test_a_breakdown_with_every_value_unknown_is_left_out_with_one_line(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    run = make_store_run(data, tmp_path / "oracle", model="oracle")
    build_report([run], tmp_path / "rep", scene_cache_dir=tmp_path / "scenes", bootstrap=50)  # no --metadata
    page = (tmp_path / "rep" / "report.html").read_text()
    assert 'id="by-scenes"' not in page and 'id="by-category"' not in page
    assert "Breakdowns left out" in page
    assert page.count("left out, the value is unknown for every dialogue") >= 2
    assert "give --metadata with scenes, or --estimate-scenes" in page
    assert 'id="by-turns"' in page  # known for every dialogue: kept
