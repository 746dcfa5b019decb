"""The authors' released prompts (``authors.yaml``, with the source of each text), rendered exactly.

The ``authors`` protocol (:mod:`mtvbench.protocol`) reproduces the code that produced the paper's Table 2
(NJU-LINK/MT-Video-Bench ``eval/``). Every text here is byte for byte what that code builds:

- the judge prompt of ``eval.py`` (not Figure 17's wording): the answer, then the checklist entry's
  ``Q*`` keys in file order as ``<key>: <question>`` lines, inside the script's indented f-string;
- the inference prompt of ``infer_qwen25vl.py``: the history is the ``str()`` of the Python list of
  ``"User: ..."`` / ``"Assistant: ..."`` strings of every earlier round, in file order;
- the inference prompt of ``infer_internvl.py`` (no history block) with its ``FrameK: <image>`` lines;
  the earlier rounds go as chat turns, and for an earlier *model* turn the script's history holds the
  whole text it sent then (frame lines and prompt), not the plain question;
- the placeholder answer both scripts write for rounds that are not model turns (``eval.py`` judges it
  when such a round has a checklist), and the InternVL3.5 Think system prompt of ``infer_internvl.py``.

Values are filled by :class:`string.Template` in one pass: an inserted text is never read as a placeholder.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from string import Template

import yaml
from pydantic import BaseModel, ConfigDict

#: the commit of the authors' repository the texts were taken from
AUTHORS_COMMIT = "547fe24720bd66e028e49b2d2bd8f95bea9c59c0"


class _Text(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    template: str | None = None
    text: str | None = None

    def fill(self, **values: str) -> str:
        assert self.template is not None
        return Template(self.template).substitute(values)


class AuthorsTexts(BaseModel):
    """``authors.yaml``: every text with where it comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    commit: str
    judge: _Text
    placeholder_answer: _Text
    qwen_inference: _Text
    internvl_inference: _Text
    internvl_frame_line: _Text
    history_user: _Text
    history_assistant: _Text
    internvl_think_system: _Text


@lru_cache(maxsize=1)
def authors_texts() -> AuthorsTexts:
    raw = resources.files("mtvbench.prompts").joinpath("authors.yaml").read_text(encoding="utf-8")
    return AuthorsTexts.model_validate(yaml.safe_load(raw))


def placeholder_answer() -> str:
    """``No need for this ability to answer.``: what the scripts answer for a round that is not a model turn."""
    return authors_texts().placeholder_answer.text or ""


def internvl_think_system() -> str:
    """The InternVL3.5 Think system prompt as ``infer_internvl.py`` sets it (its indentation kept)."""
    return authors_texts().internvl_think_system.text or ""


def authors_history_lines(turns: Sequence[tuple[str, str]]) -> list[str]:
    """``[(user, assistant), ...]`` -> ``["User: ...", "Assistant: ...", ...]`` as both scripts append them."""
    t = authors_texts()
    return [line for user, assistant in turns
            for line in (t.history_user.fill(text=user), t.history_assistant.fill(text=assistant))]


def render_qwen_script_prompt(history: Sequence[tuple[str, str]], question: str) -> str:
    """``infer_qwen25vl.py``'s prompt: the history as the ``str()`` of its list of lines."""
    return authors_texts().qwen_inference.fill(history=str(authors_history_lines(history)), question=question)


def render_internvl_script_prompt(question: str) -> str:
    """``infer_internvl.py``'s prompt text (without its frame lines, which the InternVL engine puts first)."""
    return authors_texts().internvl_inference.fill(question=question)


def internvl_frame_prefix(n: int) -> str:
    """``Frame1: <image>\\n`` ... ``FrameN: <image>\\n``."""
    line = authors_texts().internvl_frame_line
    return "".join(line.fill(n=str(i + 1)) for i in range(n))


def internvl_script_history(turns: Sequence[tuple[str, str, bool]], frames: int) -> list[tuple[str, str]]:
    """The chat turns ``infer_internvl.py`` passes as ``history`` for the next model turn.

    ``turns``: every earlier round in file order as ``(question, golden answer, was a model turn)``. The
    script appends ``"User: " + question`` after it has replaced the question of a model turn by the text
    it sent (frame lines + prompt), so an earlier model turn's user message holds ``frames`` lines of
    ``<image>`` followed by the whole prompt."""
    t = authors_texts()
    out = []
    for question, answer, model_turn in turns:
        sent = internvl_frame_prefix(frames) + render_internvl_script_prompt(question) if model_turn else question
        out.append((t.history_user.fill(text=sent), t.history_assistant.fill(text=answer)))
    return out


def render_authors_judge_prompt(answer: str, checklist_raw: Sequence[tuple[str, str]]) -> str:
    """``eval.py``'s judge prompt: ``checklist_raw`` is the entry's ``Q*``/``A*`` keys and values in file order."""
    lines = "\n".join(f"{key}: {value}" for key, value in checklist_raw if key.startswith("Q"))
    return authors_texts().judge.fill(model_answer=answer, checklist=lines)
