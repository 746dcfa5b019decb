"""The glossary of docs/architecture.md stays in step with the code (issue 26 point 4).

Every word the glossary defines is a word of the code or the command line; every name it cites in backticks
(a flag, a command, a module, a class, a stored key) exists; its flag table lists only flags the commands
have, and every spelling that ``tests/cli/test_flag_vocabulary.py`` holds the commands to. The private words
the project retired for the field's ordinary ones appear nowhere in the source."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from tests.cli.test_flag_vocabulary import HIDDEN_COMMANDS, OPTIONS, VOCABULARY

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "mtvbench"
DOC = ROOT / "docs" / "architecture.md"
#: what the source is made of besides Python: the review app's pages, the guidelines, the bundled YAML
SOURCE_SUFFIXES = {".py", ".js", ".html", ".css", ".md", ".yaml"}
#: dataset text bundled with the package (the sample benchmark): its dialogues are not mtvbench's prose
NOT_PROSE = (SRC / "data" / "sample",)

#: private words the project used where the field has ordinary ones (issue 26 point 4), as patterns
RETIRED = {
    "the one X": re.compile(r"\bthe one\s", re.IGNORECASE),
    "lane": re.compile(r"\blanes?\b", re.IGNORECASE),
    "not asked": re.compile(r"\bnot asked\b", re.IGNORECASE),
}


def _source_files() -> list[Path]:
    return sorted(p for p in SRC.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES
                  and not any(p.is_relative_to(n) for n in NOT_PROSE))


@cache
def _source_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in _source_files())


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def _table(section: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header row starts with ``header`` (cells stripped)."""
    lines = section.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[first + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


GLOSSARY = _section("Glossary")
WORDS = _table(GLOSSARY, "| word |")
FLAG_TABLE = _table(GLOSSARY, "| meaning | flag |")
VISIBLE_FLAGS = {n for o in OPTIONS for n in o.names if not o.hidden}
COMMANDS = {o.command for o in OPTIONS}
_PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
#: the pip extras pyproject.toml declares (tomllib is 3.11+, the project supports 3.10)
EXTRAS = set(re.findall(r"^([\w-]+)\s*=", _PYPROJECT.split("[project.optional-dependencies]")[1].split("\n[")[0],
                        re.MULTILINE))


def _cited(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _missing(name: str) -> str | None:
    """Why ``name`` (a name the glossary cites) is not in the code, or None when it is."""
    words = name.split()
    if name.startswith("-"):
        flag = words[0]
        return None if flag in VISIBLE_FLAGS else f"no command has the flag {flag}"
    if m := re.fullmatch(r"mtvbench\[(\w+)\]", name):
        return None if m[1] in EXTRAS else f"no pip extra {m[1]!r} in pyproject.toml"
    said_command = words[0] == "mtvbench" and len(words) > 1
    if said_command:
        words = words[1:]
    command = " ".join(w for w in words if not w.startswith("-"))
    if command in COMMANDS:
        bad = [w for w in words if w.startswith("--") and w not in VISIBLE_FLAGS]
        return f"{command} has no {bad}" if bad else None
    if said_command:
        return f"no command {command!r}"
    path, _, attr = name.partition(": ")
    if path.endswith((".py", "/")):
        if "/" not in path.rstrip("/"):  # a file name, in one package or several
            return None if any(SRC.rglob(path.rstrip("/"))) else f"no {path} in src/mtvbench"
        found = next((base / path for base in (SRC, SRC.parent, ROOT) if (base / path).exists()), None)
        if found is None:
            return f"no {path} in src/mtvbench or the repository"
        if attr and not re.search(rf"\b{re.escape(attr)}\b", found.read_text(encoding="utf-8")):
            return f"{path} has no {attr}"
        return None
    leading = re.match(r"[\w./\-]+", name.removeprefix("WS/"))
    needle = leading[0].rstrip(".:") if leading else name
    parts = needle.split(".") if re.fullmatch(r"[A-Za-z_][\w.]*", needle) else [needle]
    lost = [p for p in parts if not re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", _source_text())]
    return f"{needle!r} is nowhere in src/mtvbench" if lost else None


def test_the_tables_are_read() -> None:
    assert {row[0] for row in WORDS} >= {"run", "score", "role", "job", "extra"}
    assert len(FLAG_TABLE) >= 10 and all(len(row) == 2 for row in FLAG_TABLE)
    assert all(len(row) == 3 for row in WORDS)


@pytest.mark.parametrize("word", [w for row in WORDS for w in row[0].split(" / ")])
def test_every_glossary_word_is_a_word_of_the_code(word: str) -> None:
    names = {n.lstrip("-") for n in VISIBLE_FLAGS} | {part for c in COMMANDS for part in c.split()}
    in_names = any(word in re.split(r"[-_]", n) for n in names)
    in_code = {p.stem for p in _source_files()} | {p.name for p in SRC.rglob("*") if p.is_dir()}
    assert in_names or word in in_code or re.search(rf"\b{word}\b", _source_text()), word


@pytest.mark.parametrize("name", sorted(set(_cited(GLOSSARY))))
def test_every_name_the_glossary_cites_exists(name: str) -> None:
    why = _missing(name)
    assert why is None, f"docs/architecture.md's glossary cites `{name}`: {why}"


def test_the_names_are_checked_for_real() -> None:
    """The check above finds a name that is not there, of each kind it tells apart."""
    for name in ("--no-such-flag", "mtvbench no-such-command --out", "util/no_such.py", "models/settings.py: NOPE",
                 "mtvbench[nosuchextra]", "NoSuchRecord.field", "no-such-key"):
        assert _missing(name) is not None, name
    for name in ("--judge-runs", "review add-user --job", "util/rowfiles.py", "mtvbench[hf]", "records.Price"):
        assert _missing(name) is None, name


def test_the_flag_table_lists_the_commands_flags() -> None:
    listed = {n for row in FLAG_TABLE for n in re.findall(r"--[\w-]+", row[1])}
    assert listed <= VISIBLE_FLAGS, f"the glossary's flag table lists flags no command has: {listed - VISIBLE_FLAGS}"
    spellings = {s for names, _ in VOCABULARY.values() for s in names}
    assert spellings <= listed, f"the vocabulary test's flags missing from the table: {spellings - listed}"
    assert HIDDEN_COMMANDS == []


@pytest.mark.parametrize("word", sorted(RETIRED))
def test_the_glossary_uses_no_retired_word(word: str) -> None:
    assert not RETIRED[word].search(GLOSSARY), word


@pytest.mark.parametrize("word", sorted(RETIRED))
def test_no_retired_private_word_in_src(word: str) -> None:
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in _source_files()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if RETIRED[word].search(line)]
    assert not hits, f"{word!r} (say it in the field's words): {hits}"


def test_the_retired_words_are_found() -> None:
    for word, example in (("the one X", "the one writer of the store"), ("lane", "a video's lane sends it"),
                          ("not asked", "its turns are not asked")):
        assert RETIRED[word].search(example)
    assert not any(p.search("one of the ones; planes; the only writer; asked") for p in RETIRED.values())
