"""``mtvbench models``: the presets of the paper's 24 models; ``--backends``: the backend prefixes."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from mtvbench.cli.common import fail
from mtvbench.models.presets import Preset, get_preset, list_presets
from mtvbench.models.registry import BACKENDS
from mtvbench.registry import RegistryError
from mtvbench.render.console import (
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    print_tables,
    resolve_format,
    say,
    styled,
)
from mtvbench.render.tables import Col, TextTable, Value

PROTOCOL_NOTE = ("--protocol authors (the default) sends each row what the authors' released script for it sends "
                 "(Figure 15 where they released none) and scores as their eval.py; --protocol paper sends Figure 15 "
                 "with the generation values shown.")
UNCHECKED_NOTE = ("Generation values marked (unchecked) were not all seen at their source; `mtvbench models NAME` "
                  "shows the source of every value. Compare them before publishing numbers.")


def _system_label(p: Preset) -> str:
    if not p.system:
        return "-"
    return "InternVL3.5 Think prompt" if "<think>" in p.system else p.system[:40]


def presets_table(presets: list[Preset]) -> TextTable:
    """One row per preset; the preset name (what ``--model`` takes) and its checkpoint id are never cut:
    on a narrow terminal the detail columns are left out first, then each row becomes a block of lines."""
    cols = [Col("preset", "id", key="name"), Col("paper row", key="display"),
            Col("backend : checkpoint", "id", key="spec"),
            Col("sent under --protocol authors", optional=True, key="authors"),
            Col("frames", "num", optional=True), Col("frame size", optional=True),
            Col("generation", optional=True), Col("system prompt", optional=True, key="system"),
            Col("paper overall", "num", key="paper_overall")]
    rows = []
    for p in presets:
        spec = p.spec() + (f"  (also @{', @'.join(p.alt_backends)})" if p.alt_backends else "")
        rows.append([p.name, p.display, spec, _authors_label(p), p.frames, p.frame_overrides().rule(),
                     p.generation.summary(), _system_label(p), p.paper.overall])
    return TextTable(columns=cols, rows=rows, title="MT-Video-Bench model presets (paper Table 2)",
                     notes=[PROTOCOL_NOTE, UNCHECKED_NOTE, "`mtvbench models NAME` shows one preset in full."])


def _authors_label(p: Preset) -> str:
    return f"eval/{p.authors_script}" if p.authors_script else "Figure 15 (no released script)"


def _show(p: Preset) -> None:
    console.print(styled([(p.name, "bold"), (f" — {p.display} ({p.group})", None)]), highlight=False)
    also = f"  (also: {', '.join(p.alt_backends)})" if p.alt_backends else ""
    lines = [("backend", f"{p.spec()}{also}")]
    if p.family:
        lines.append(("adapter", p.family))
    lines.append(("checkpoint", p.checkpoint_source or "id not verified"))
    if p.serve:
        lines.append(("serve", f"{p.serve}  (then --model {p.name}@openai --model-base-url URL)"))
    lines.append(("authors", f"--protocol authors sends: {_authors_label(p)}"))
    lines += [("frames", f"{p.frames}, {p.frame_overrides().rule()}"),
              ("generation", f"{p.generation.summary()}  (source: {p.generation.source})")]
    if p.authors_generation is not None:
        g = p.authors_generation
        lines.append(("  authors", f"{g.summary()}  (source: {g.source})"))
    if p.options:
        lines.append(("options", json.dumps(p.options)))
    for label, value in lines:
        console.print(styled([(f"  {label + ':':<12}", None), (value, None)]), highlight=False, soft_wrap=True)
    if p.system:
        console.print(styled([("  system prompt:", None)]), highlight=False)
        console.print(styled([(p.system, None)]), highlight=False, soft_wrap=True)
    if p.notes:
        console.print(styled([("  notes:      ", None), (p.notes, None)]), highlight=False, soft_wrap=True)
    s = p.paper
    say(f"  paper:      Overall {s.overall:.2f} | OR {s.OR:.2f} MR {s.MR:.2f} CS {s.CS:.2f} "
        f"AR {s.AR:.2f} TS {s.TS:.2f} PI {s.PI:.2f}")
    say(f"  run:        mtvbench run --model {p.name} --data DATA --judge JUDGE --out runs/{p.name}")


def backends_table() -> TextTable:
    """One row per backend prefix (built-in or from an installed package): what ``--model PREFIX:NAME`` runs."""
    rows: list[list[Value]] = []
    for prefix in BACKENDS.names():
        try:
            b = BACKENDS.get(prefix)
            install, what = (f"mtvbench[{b.extra}]" if b.extra else "core"), b.description
        except RegistryError as e:
            install, what = "–", f"failed to load: {e.message}"
        rows.append([prefix, install, BACKENDS.origin(prefix), what])
    return TextTable(columns=[Col("prefix", "id"), Col("install"), Col("from", optional=True), Col("runs")],
                     rows=rows, title="Model backends (--model / --judge PREFIX:NAME)")


def models_command(
    name: Annotated[str | None, typer.Argument(help="show one preset in full")] = None,
    backends: Annotated[bool, typer.Option("--backends", help="list the backend prefixes instead, with where "
                                                              "each comes from")] = False,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """List the model presets: `--model <preset>` runs that row of Table 2 with the paper's settings."""
    if backends:
        print_tables([backends_table()], output_format)
        return
    if name is not None:
        p = get_preset(name)
        if p is None:
            fail(f"no preset named {name!r}; run `mtvbench models` for the list")
        if output_format == OutputFormat.json:
            emit_json(p.model_dump(mode="json"))
        elif output_format in (OutputFormat.plain, OutputFormat.md, OutputFormat.csv):
            print_tables([presets_table([p])], output_format)
        else:
            _show(p)
        return
    presets = list_presets()
    table = presets_table(presets)
    if resolve_format(output_format) == "plain":  # one line per preset for cut and grep: no title line
        table.title = None
    print_tables([table], output_format, json_obj=[p.model_dump(mode="json") for p in presets])
