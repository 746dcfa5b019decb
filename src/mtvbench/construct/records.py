"""Moved: what every build artifact shares is :mod:`mtvbench.construct.artifacts` ("records" names only the
records of :mod:`mtvbench.records`). The names work from here for one release, with a DeprecationWarning."""

from mtvbench.util.moved import moved_names

__getattr__ = moved_names(__name__, dict.fromkeys(
    ("Artifact", "ArtifactMeta", "Failure", "Manifest", "Shortfall", "VIDEO_NAME", "VideoRecord", "after_asks",
     "content_digest", "given_up", "video_name_problem"), "mtvbench.construct.artifacts"))
