"""The README's test command is the one ``.ci/run`` runs, and ``[dev]`` brings what that command and
the suite need in a fresh virtualenv (pytest-xdist for ``-n``; setuptools and wheel for the docs test
that builds an example package offline). Optional test groups skip, naming their extra."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    """The lines of the README's first code block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block, "README.md has no bash block"
    return block.group(1).strip().splitlines()


def dev_requirements() -> set[str]:
    """The distribution names of the ``dev`` extra in pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dev = \[(.*?)^\]", text, re.DOTALL | re.MULTILINE)
    assert block, "pyproject.toml has no dev extra"
    return {re.split(r"[<>=!~\[ ;]", r)[0].lower() for r in re.findall(r'^\s*"([^"]+)"', block.group(1), re.M)}


def test_the_readme_has_two_commands_and_ci_runs_the_second() -> None:
    commands = readme_commands()
    assert len(commands) == 2 and commands[1].startswith("pip install -e '.[dev]' && python -m pytest")
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert commands[1].replace("pip install -e", "pip install -q -e") in ci
    # the docs extra is installed before the tests (the site's tests run, not skip), and after the tests the
    # site is built strictly (a broken link or reference fails CI)
    test_line = ci.index(commands[1].replace("pip install -e", "pip install -q -e"))
    assert any(ln.startswith("pip install -q -e '.[docs]'") for ln in ci[:test_line])
    assert ci[-1].startswith("mkdocs build --strict")


def test_dev_brings_what_the_test_command_needs() -> None:
    dev, command = dev_requirements(), readme_commands()[1]
    assert {"pytest", "pytest-asyncio"} <= dev
    if re.search(r"\s-n\s", command):
        assert "pytest-xdist" in dev
    assert {"setuptools", "wheel"} <= dev  # tests/docs/test_extending.py: pip install --no-build-isolation
