"""Moved: how the build stages call a model is :mod:`mtvbench.construct.calls` (``llm`` names the LLM judge,
:mod:`mtvbench.judge.llm`). The names work from here for one release, with a DeprecationWarning."""

from mtvbench.util.moved import moved_names

__getattr__ = moved_names(__name__, dict.fromkeys(
    ("ItemCaller", "LazyFrames", "StageModel", "failure", "gather_all", "ranges_frames", "text_check"),
    "mtvbench.construct.calls"))
