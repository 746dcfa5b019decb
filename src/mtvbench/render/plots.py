"""Plots as PNG bytes (matplotlib, Agg backend; no display, no network).

Labels come from data (model and run names, categories): every figure is drawn with
mathtext and usetex off (:data:`LITERAL_TEXT`), so ``$\\foo$`` is shown as typed instead of
being parsed (or crashing the report), and each label goes through
:func:`mtvbench.util.escape.plot_label`. A missing value is drawn as no bar or no point,
never as a zero.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

from mtvbench.errors import MissingExtraError
from mtvbench.util.escape import plot_label

#: rc settings of every figure: text is literal
LITERAL_TEXT = {"text.usetex": False, "text.parse_math": False}


def _plt():  # type: ignore[no-untyped-def]
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MissingExtraError("plots", "report", "matplotlib") from e
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    _plt().close(fig)
    return buf.getvalue()


def _legend_beside(ax, right_axis: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The legend to the right of the plot, outside it (past the right axis' labels when there is one), so
    that it covers no bar or point."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.16 if right_axis else 1.02, 1.0), borderaxespad=0.0)


def line_plot(x_labels: Sequence[str], series: Mapping[str, Sequence[float | None]], *, title: str,
              xlabel: str = "", ylabel: str = "score (%)", counts: Sequence[int] | None = None,
              ylim: tuple[float, float] | None = (0.0, 100.0)) -> bytes:
    """One line per series over categorical x; ``counts`` adds grey bars (right axis), as in
    the paper's Figure 4(a) distribution."""
    plt = _plt()
    with plt.rc_context(LITERAL_TEXT):
        return _line_plot(plt, x_labels, series, title=title, xlabel=xlabel, ylabel=ylabel, counts=counts,
                          ylim=ylim)


def _line_plot(plt, x_labels: Sequence[str], series: Mapping[str, Sequence[float | None]], *,  # type: ignore[no-untyped-def]
               title: str, xlabel: str, ylabel: str, counts: Sequence[int] | None,
               ylim: tuple[float, float] | None) -> bytes:
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    xs = list(range(len(x_labels)))
    if counts is not None:
        ax2 = ax.twinx()
        ax2.bar(xs, counts, color="#d0d0d0", width=0.6, zorder=0, label="dialogues")
        ax2.set_ylabel("dialogues")
        ax.set_zorder(ax2.get_zorder() + 1)
        ax.patch.set_visible(False)
    for name, vals in series.items():
        pts = [(x, v) for x, v in zip(xs, vals) if v is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=plot_label(name))
    ax.set_xticks(xs)
    ax.set_xticklabels([plot_label(x, 24) for x in x_labels])
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_title(plot_label(title, 90))
    ax.set_xlabel(plot_label(xlabel))
    ax.set_ylabel(plot_label(ylabel))
    ax.grid(True, alpha=0.3)
    if series:
        _legend_beside(ax, right_axis=counts is not None)
    return _png(fig)


def grouped_bars(categories: Sequence[str], series: Mapping[str, Sequence[float | None]], *, title: str,
                 ylabel: str = "score (%)", errors: Mapping[str, Sequence[tuple[float, float] | None]] | None = None
                 ) -> bytes:
    """Bars grouped by category, one colour per series; optional (lo, hi) error bars."""
    plt = _plt()
    with plt.rc_context(LITERAL_TEXT):
        return _grouped_bars(plt, categories, series, title=title, ylabel=ylabel, errors=errors)


def _grouped_bars(plt, categories: Sequence[str], series: Mapping[str, Sequence[float | None]], *,  # type: ignore[no-untyped-def]
                  title: str, ylabel: str, errors: Mapping[str, Sequence[tuple[float, float] | None]] | None
                  ) -> bytes:
    fig, ax = plt.subplots(figsize=(max(6.4, 0.9 * len(categories) * max(1, len(series)) / 2), 3.6))
    n = max(1, len(series))
    width = 0.8 / n
    for i, (name, vals) in enumerate(series.items()):
        xs = [c + (i - (n - 1) / 2) * width for c in range(len(categories))]
        ys = [v if v is not None else math.nan for v in vals]
        yerr = None
        if errors and name in errors:
            lo = [max(0.0, y - e[0]) if e and not math.isnan(y) else 0.0 for y, e in zip(ys, errors[name])]
            hi = [max(0.0, e[1] - y) if e and not math.isnan(y) else 0.0 for y, e in zip(ys, errors[name])]
            yerr = [lo, hi]
        ax.bar(xs, ys, width=width, label=plot_label(name), yerr=yerr, capsize=2)
    ax.set_xticks(list(range(len(categories))))
    ax.set_xticklabels([plot_label(c, 24) for c in categories])
    ax.set_title(plot_label(title, 90))
    ax.set_ylabel(plot_label(ylabel))
    ax.set_ylim(0, 100)
    ax.grid(True, axis="y", alpha=0.3)
    if series:
        _legend_beside(ax)
    return _png(fig)
