"""Small datasets in the released layout, with real (tiny) videos written by PyAV."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import av
import numpy as np


def write_video(path: Path, n_frames: int = 24, size: tuple[int, int] = (64, 48), fps: int = 8) -> Path:
    """A tiny real H.264 video whose frame i is a flat grey level 10*i (mod 250)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=fps)
        s.width, s.height, s.pix_fmt = size[0], size[1], "yuv420p"
        for i in range(n_frames):
            img = np.full((size[1], size[0], 3), (10 * i) % 250, dtype=np.uint8)
            for p in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


def checklist_entry(k: int, yes_facts: list[str], no_fact: str) -> dict[str, Any]:
    e: dict[str, Any] = {"round index": k}
    qs = [f"Does the model state that {f}?" for f in yes_facts] + [f"Does the model state that {no_fact}?"]
    for i, q in enumerate(qs, 1):
        e[f"Q{i}"] = q
        e[f"A{i}"] = "Yes" if i <= len(yes_facts) else "No"
    return e


def make_dataset(root: Path, with_video: bool = True) -> Path:
    """Two videos, one dialogue per task, 5 rounds, checklists on the evaluated rounds."""
    ability_of = {"object_reference": "Object Reference", "memory_recall": "Memory Recall",
                  "summary": "Summary", "answer_refusal": "Answer Refusal",
                  "topic_shifting": "Topic Shifting", "proactive_interaction": "Proactive Interaction"}
    (root / "mtqa").mkdir(parents=True, exist_ok=True)
    (root / "checklist").mkdir(parents=True, exist_ok=True)
    for j, (stem, ability) in enumerate(ability_of.items()):
        video = f"vid{j % 2}"
        rounds = {}
        for k in range(1, 6):
            evaluated = k in (3, 5)
            rounds[f"Round {k}"] = {
                "User": f"Question {k} about the {stem} clip?",
                "Assistant": f"The red square moves right in round {k} and the blue circle stays.",
                "Ability": ability if evaluated else "Entity Recognition",
            }
        (root / "mtqa" / f"{stem}.json").write_text(json.dumps({video: [{"event_index": j, "mtqa": rounds}]}))
        facts = ["the red square moves right", "the blue circle stays", "the square is red",
                 "the circle is blue"]
        ck = {video: {str(j): [checklist_entry(3, facts, "the square is green"),
                               checklist_entry(5, facts, "the circle is yellow")]}}
        (root / "checklist" / f"{stem}_CheckList.json").write_text(json.dumps(ck))
    if with_video:
        for v in ("vid0", "vid1"):
            write_video(root / "videos" / f"{v}.mp4")
    return root
