"""``mtvbench models``: the presets of the paper's 24 models."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from mtvbench.cli.common import console, fail
from mtvbench.models.presets import Preset, get_preset, list_presets


def _system_label(p: Preset) -> str:
    if not p.system:
        return "-"
    return "InternVL3.5 Think prompt" if "<think>" in p.system else p.system[:40]


def presets_table(presets: list[Preset]) -> Table:
    table = Table(title="MT-Video-Bench model presets (paper Table 2)", show_lines=False)
    for col, kw in (("preset", {"style": "bold"}), ("paper row", {}), ("backend : checkpoint", {}),
                    ("frames", {"justify": "right"}), ("frame size", {}), ("generation", {}),
                    ("system prompt", {}), ("paper overall", {"justify": "right"})):
        table.add_column(col, **kw)
    for p in presets:
        spec = p.spec() + (f"  (also @{', @'.join(p.alt_backends)})" if p.alt_backends else "")
        table.add_row(p.name, p.display, spec, str(p.frames), p.frame_overrides().rule(), p.generation.summary(),
                      _system_label(p), f"{p.paper.overall:.2f}")
    return table


def models_command(
    name: Annotated[str | None, typer.Argument(help="show one preset in full")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the presets as JSON")] = False,
) -> None:
    """List the model presets: `--model <preset>` runs that row of Table 2 with the paper's settings."""
    if name is not None:
        p = get_preset(name)
        if p is None:
            fail(f"no preset named {name!r}; run `mtvbench models` for the list")
        if as_json:
            print(json.dumps(p.model_dump(mode="json"), indent=2))
            return
        console.print(f"[bold]{p.name}[/] — {p.display} ({p.group})")
        also = f"  (also: {', '.join(p.alt_backends)})" if p.alt_backends else ""
        console.print(f"  backend:    {p.spec()}{also}")
        if p.family:
            console.print(f"  adapter:    {p.family}")
        console.print(f"  checkpoint: {p.checkpoint_source or 'id not verified'}", markup=False, highlight=False)
        if p.serve:
            console.print(f"  serve:      {p.serve}  (then --model {p.name}@openai --model-base-url URL)",
                          markup=False, highlight=False)
        if p.authors_script:
            console.print(f"  authors:    eval/{p.authors_script}", markup=False, highlight=False)
        console.print(f"  frames:     {p.frames}, {p.frame_overrides().rule()}")
        console.print(f"  generation: {p.generation.summary()}  [dim]source: {p.generation.source}[/]")
        if p.options:
            console.print(f"  options:    {json.dumps(p.options)}")
        if p.system:
            console.print("  system prompt:")
            console.print(p.system, highlight=False, markup=False)
        if p.notes:
            console.print(f"  notes:      {p.notes}")
        s = p.paper
        console.print(f"  paper:      Overall {s.overall:.2f} | OR {s.OR:.2f} MR {s.MR:.2f} CS {s.CS:.2f} "
                      f"AR {s.AR:.2f} TS {s.TS:.2f} PI {s.PI:.2f}")
        console.print(f"  run:        mtvbench run --model {p.name} --data DATA --judge JUDGE --out runs/{p.name}")
        return
    presets = list_presets()
    if as_json:
        print(json.dumps([p.model_dump(mode="json") for p in presets], indent=2))
        return
    console.print(presets_table(presets))
    console.print("Generation values marked (unchecked) were not all seen at their source; `mtvbench models NAME` "
                  "shows the source of every value. Compare them before publishing numbers.", style="dim")
