"""One spelling per meaning across every command (issue 17 item 8; the glossary in docs/architecture.md).

The typer app is walked: every command, every option. A flag whose name says what it is for (a URL, a key
variable, where output goes, a cache folder, ...) must be that meaning's one spelling; a spelling used by
several commands is the same kind of flag everywhere (a yes/no flag on one command is not a value on
another); words that mean something else in mtvbench (``role``: the part a model plays; ``extra``: a pip
extra; ``generator``, ``workdir``, ``to``: spellings renamed before 0.1.0) name no flag; no option or command
is hidden."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import pytest
import typer

from mtvbench.cli import app


@dataclass(frozen=True)
class Option:
    command: str
    names: tuple[str, ...]  # every spelling, e.g. ("--out", "-o") or ("--objects", "--no-objects")
    flag: bool  # a yes/no flag, not a value
    hidden: bool  # the option, or its command, is hidden
    help: str

    @property
    def name(self) -> str:
        return self.names[0]


def _walk(command: object, path: tuple[str, ...], out: list[Option], hidden_commands: list[str]) -> None:
    hidden_command = bool(getattr(command, "hidden", False))
    if hidden_command:
        hidden_commands.append(" ".join(path))
    if hasattr(command, "commands"):
        for name, sub in sorted(command.commands.items()):  # type: ignore[attr-defined]
            _walk(sub, (*path, name), out, hidden_commands)
        return
    for p in command.params:  # type: ignore[attr-defined]
        if p.param_type_name == "option" and p.name != "help":
            out.append(Option(" ".join(path), (*p.opts, *p.secondary_opts), bool(p.is_flag),
                              bool(p.hidden) or hidden_command, p.help or ""))


def _app() -> tuple[list[Option], list[str]]:
    options: list[Option] = []
    hidden_commands: list[str] = []
    _walk(typer.main.get_command(app), (), options, hidden_commands)
    return options, hidden_commands


OPTIONS, HIDDEN_COMMANDS = _app()
VISIBLE = [o for o in OPTIONS if not o.hidden]

#: meaning -> (its spellings, a pattern every flag of that meaning matches, whatever it is called)
VOCABULARY: dict[str, tuple[frozenset[str], str]] = {
    "the model a command asks (under test, the build's, the checklist writer)":
        (frozenset({"--model"}), r"^--(model|generator|writer|llm|mllm|model-spec)$"),
    "the judge": (frozenset({"--judge"}), r"^--(judge|judge-model|evaluator|grader)$"),
    "the URL of a role's server": (frozenset({"--model-base-url", "--judge-base-url"}),
                                   r"base-url|api-base|endpoint|server-url"),
    "the environment variable of a role's key": (frozenset({"--model-api-key-env", "--judge-api-key-env"}),
                                                 r"api-key|key-env|token-env"),
    "a backend option of a role (KEY=VALUE)": (frozenset({"--model-option", "--judge-option"}),
                                               r"-options?$|^--extra"),
    "where a command writes": (frozenset({"--out"}), r"^--(out|output|to|dest|workdir|out-dir|output-dir)$"),
    "the frame cache folder": (frozenset({"--cache-dir"}), r"^--(cache-dir|cache|frame-cache|frames-cache)$"),
    "the scene-count cache folder": (frozenset({"--scene-cache"}), r"^--(scene-cache|scenes-cache|scene-cache-dir)$"),
    "the printed format": (frozenset({"--format"}), r"^--(format|output-format|fmt)$"),
    "the judge's repeats per turn": (frozenset({"--judge-runs"}), r"^--judge-(runs|repeats|passes|times)$"),
    "the seed of a command's random draws": (frozenset({"--seed"}), r"^--(seed|random-seed|rng-seed|sample-seed)$"),
    "the model's sampling seed": (frozenset({"--model-seed"}), r"^--(model-seed|sampling-seed|generation-seed)$"),
    "the dataset": (frozenset({"--data"}), r"^--(data|dataset|data-dir|dataset-dir|benchmark)$"),
    "a build workspace": (frozenset({"--workspace"}), r"^--(workspace|ws|workspace-dir)$"),
    "what a person does in the review": (frozenset({"--job"}), r"^--(job|role|position|duty)$"),
    "bootstrap draws": (frozenset({"--bootstrap"}), r"^--(bootstrap|n-boot|boot|bootstraps)$"),
    "model calls in flight": (frozenset({"--concurrency"}), r"^--(concurrency|workers|parallel|jobs)$"),
}

#: words that mean something else in mtvbench: no flag is named with them
RESERVED = {"role": "the part a model plays (model, judge, a build stage's role)",
            "extra": "a pip extra (mtvbench[hf]); backend options are --model-option / --judge-option",
            "generator": "old spelling of checklists --model", "workdir": "old spelling of demo --out"}



def test_the_walk_sees_every_command() -> None:
    commands = {o.command for o in OPTIONS}
    assert {"run", "checklists", "build all", "build suitability", "review add-user", "cache clear", "scenes",
            "sweep", "estimate", "models"} <= commands
    assert len(VISIBLE) > 300  # build's settings flags on every stage command, run's, ...


@pytest.mark.parametrize("meaning", sorted(VOCABULARY))
def test_each_meaning_has_one_spelling(meaning: str) -> None:
    spellings, pattern = VOCABULARY[meaning]
    found = {(o.command, n) for o in VISIBLE for n in o.names if n.startswith("--") and re.search(pattern, n)}
    wrong = sorted((c, n) for c, n in found if n not in spellings)
    assert not wrong, f"{meaning}: spelled {', '.join(sorted(spellings))}, but found {wrong}"
    assert found, f"{meaning}: no command has it any more (update the table)"


def test_a_spelling_means_one_kind_of_flag_everywhere() -> None:
    kinds: dict[str, set[tuple[bool, str]]] = defaultdict(set)
    for o in VISIBLE:
        for n in o.names:
            kinds[n].add((o.flag, o.command))
    mixed = {n: sorted(k) for n, k in kinds.items() if len({flag for flag, _ in k}) > 1}
    assert not mixed, f"a yes/no flag on one command and a value on another: {mixed}"


def test_the_cache_folders_are_told_apart() -> None:
    for o in VISIBLE:
        if o.name == "--cache-dir":
            assert "frame" in o.help, (o.command, o.help)
        if o.name == "--scene-cache":
            assert "scene" in o.help, (o.command, o.help)


def test_no_flag_takes_a_word_that_means_something_else() -> None:
    for word, meaning in RESERVED.items():
        bad = sorted({(o.command, n) for o in VISIBLE for n in o.names if word in n.lstrip("-").split("-")})
        assert not bad, f"'{word}' means {meaning}; flags named with it: {bad}"


def test_no_command_spells_the_suitability_stage_score() -> None:
    """"score" names the benchmark's scores (``mtvbench score``, ``scoring``, scores.json), not the
    task-suitability stage."""
    bad = sorted({(o.command, n) for o in VISIBLE for n in o.names if n.startswith("--score")})
    assert not bad
    visible_commands = {o.command for o in VISIBLE}
    assert "build score" not in visible_commands and "score" in visible_commands


def test_no_option_or_command_is_hidden() -> None:
    """Every spelling a command takes is shown in its help: a rename is listed in CHANGELOG.md, not kept hidden."""
    assert [(o.command, o.name) for o in OPTIONS if o.hidden] == []
    assert HIDDEN_COMMANDS == []
