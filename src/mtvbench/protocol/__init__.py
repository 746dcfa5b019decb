"""Evaluation protocols: how a dataset's rounds become judged turns, what the judge is asked, how its
reply is read and how scores are aggregated.

- ``authors`` (default): the released code that produced the paper's Table 2
  (NJU-LINK/MT-Video-Bench ``eval/eval.py`` and the inference scripts), its quirks included, so a number
  can be put next to Table 2 (:mod:`.authors`);
- ``paper``: the paper's text read cleanly (Figures 15-17, verdicts paired by key, unrounded means)
  (:mod:`.paper`).

A protocol is part of a run's identity: a stored result of one is never reused for the other.
"""

from mtvbench.protocol.base import PROTOCOL_NAMES, EvalProtocol, JudgeReading, ProtocolName, get_protocol

__all__ = ["PROTOCOL_NAMES", "EvalProtocol", "JudgeReading", "ProtocolName", "get_protocol"]
