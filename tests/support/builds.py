"""A build workspace made by ``mtvbench build all`` over two generated videos (scripted model replies)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mtvbench.cli.construct import build_app
from tests.support.scene_videos import BLUE, RED, Scene, three_scene_video, write_scenes

runner = CliRunner()


def two_videos(root: Path) -> Path:
    """``Sports/match.mp4`` (three scenes, a red square in the first and last) and ``Movie/short.mp4``."""
    three_scene_video(root / "Sports" / "match.mp4")
    write_scenes(root / "Movie" / "short.mp4", [
        Scene(40, hue=20, obj=("disc", BLUE)),
        Scene(40, hue=120, sat=140, val=(80, 170), obj=("square", RED)),
    ])
    return root


def build_all(ws: Path, videos: Path | None, url: str, *extra: str):  # noqa: ANN202
    """``mtvbench build all`` of ``videos`` into ``ws`` with the model at ``url`` (links by shared objects only)."""
    config = ws.parent / "build.json"
    config.write_text(json.dumps({"crossscene": {"theme_threshold": None}}))  # links by shared objects only
    args = ["all", "--workspace", str(ws), "--model", "openai:builder", "--model-base-url", url,
            "--detector", "tests.support.detector:make_detector", "--config", str(config), *extra]
    if videos is not None:
        args += ["--videos", str(videos)]
    return runner.invoke(build_app, args)
