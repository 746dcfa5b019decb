"""What every artifact of the construction pipeline shares (pydantic, stored as JSON); each stage's own
artifact is declared in its module (:mod:`mtvbench.construct.stages`), next to the code that makes it.

Every artifact has ``complete``: a stage some of whose model calls failed stores what it
has with ``complete=False`` (and the failures); the next run asks only for what is
missing (the paid replies are in the workspace's call journal, :mod:`.journal`).

Every artifact also carries :class:`ArtifactMeta`: the fingerprint of what it was made
from (the content digests of the upstream artifacts it read, the video file's content
fingerprint for the first stages, the stage's settings including the model, the prompt
and the stage version) and the digest of its own content. An artifact whose content does
not match its digest was edited by hand; one whose recorded inputs differ from the
current ones is stale (see :mod:`.workspace`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from mtvbench.ledger.keys import digest

#: a video name is a folder name inside the workspace: no separators, no leading dot ("..")
VIDEO_NAME = re.compile(r"[A-Za-z0-9_][\w.\-]{0,199}")


def video_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a video name (it is used as a folder name), or None."""
    if not VIDEO_NAME.fullmatch(name):
        return ("video names may only use letters, digits, '_', '-' and '.', must not start with '.' or '-' "
                f"and have at most 200 characters: {name!r}")
    return None


class VideoRecord(BaseModel):
    """A video of the build: its name (a safe folder name), its file and its category."""

    name: str
    path: str
    category: str = "uncategorized"

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        problem = video_name_problem(v)
        if problem:
            raise ValueError(problem)
        return v


class Manifest(BaseModel):
    """The videos a build workspace knows (``WS/manifest.json``)."""

    videos: list[VideoRecord] = Field(default_factory=list)


class ArtifactMeta(BaseModel):
    """What an artifact was made from, and the digest of its own content (see module doc)."""

    stage: str
    #: upstream stage -> its content digest; ``video`` -> the video file's content fingerprint
    upstream: dict[str, str] = Field(default_factory=dict)
    #: the stage's settings: model, prompt digest, stage version, frame and rule settings
    settings: dict[str, Any] = Field(default_factory=dict)
    digest: str = ""


class Shortfall(BaseModel):
    """Why a stage made less than it was asked for (one line per video).

    ``failed``: the replies broke the rules so that the video exports no dialogue, or a dialogue
    without any checklist (``build all`` exits 3); otherwise the line is information (units all
    validly rated below the threshold, some of several dialogues given up)."""

    why: str
    failed: bool = False


class Artifact(BaseModel):
    """What every stage's artifact has: the video it is about, whether the stage made all of it (``complete``), and
    what it was made from (``meta``, filled in when it is written)."""

    video: str
    complete: bool = True
    meta: ArtifactMeta | None = None

    def shortfall(self) -> Shortfall | None:
        """What this stage could not make from its input (see :class:`Shortfall`); None when nothing."""
        return None


def content_digest(artifact: Artifact) -> str:
    """The digest (24 hex digits) of the artifact's content without its ``meta``, key order ignored."""
    return digest(artifact.model_dump(mode="json", exclude={"meta"}), length=24)


# ------------------------------------------------------------------ items without a result


class Failure(BaseModel):
    """One item a stage has no result for. ``error``: the model call failed (asked again on the next
    run; the stage is incomplete); ``rejected``: the replies broke the rules up to the re-ask bound
    (given up: asked again only with ``--retry-failed``)."""

    item: str  # the item's id in the call journal, e.g. "clip/3", "S1/object_reference"
    problems: list[str]
    kind: Literal["error", "rejected"] = "rejected"
    attempts: int = 0


def given_up(failures: list[Failure]) -> list[Failure]:
    """The items whose replies broke the rules up to the re-ask bound."""
    return [f for f in failures if f.kind == "rejected"]


def after_asks(failures: list[Failure]) -> str:
    """`` after 2 re-asks`` for items asked up to three times; empty when asked once."""
    n = max((f.attempts for f in failures), default=1) - 1
    return f" after {n} re-ask{'s' if n != 1 else ''}" if n > 0 else ""
