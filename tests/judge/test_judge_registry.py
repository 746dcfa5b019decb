"""Judges are registered like backends: ``offline`` and the LLM judge are entries of ``JUDGES``, a judge
of another package is one more entry, and ``create_judge`` looks the spec up there."""

from __future__ import annotations

import asyncio

import pytest

import mtvbench
from mtvbench.data.schema import ChecklistItem, Round
from mtvbench.judge.factory import create_judge
from mtvbench.judge.llm import LLMJudge
from mtvbench.judge.offline import OfflineJudge
from mtvbench.judge.protocol import JudgeSettings
from mtvbench.judge.registry import JUDGES, UnknownJudgeError, judge_of, register_judge
from mtvbench.models.settings import BackendOptions
from mtvbench.protocol import get_protocol
from mtvbench.records import JudgeVerdict
from mtvbench.registry import DuplicateNameError

ROUND = Round(index=2, user="What is red?", assistant="The square.", model_turn=True,
              checklist=[ChecklistItem(key="Q1", question="Does it say the square?", expected="Yes"),
                         ChecklistItem(key="Q2", question="Does it say a circle?", expected="No")])


class Constant:
    def __init__(self, answer: str, settings: JudgeSettings):
        self.name = f"constant:{answer}"
        self.answer, self.settings = answer, settings

    async def judge(self, answer: str, rnd: Round, run: int) -> JudgeVerdict:
        return JudgeVerdict(run=run, status="ok", attempts=1,
                            verdicts={it.answer_key: self.answer for it in rnd.checklist or []})

    async def aclose(self) -> None:
        return None


def test_offline_and_the_llm_judge_are_entries() -> None:
    assert {"offline", "llm"} <= set(JUDGES.names())
    assert isinstance(create_judge("offline"), OfflineJudge) and isinstance(create_judge(" Offline "), OfflineJudge)
    judge = create_judge("openai:judge-x", BackendOptions(base_url="http://127.0.0.1:9/v1"), max_attempts=2,
                         temperature=0.0, protocol=get_protocol("authors"))
    assert isinstance(judge, LLMJudge) and judge.name == "openai:judge-x"
    assert (judge.max_attempts, judge.temperature, judge.protocol.name) == (2, 0.0, "authors")
    again = create_judge("llm:openai:judge-x", BackendOptions(base_url="http://127.0.0.1:9/v1"))
    assert isinstance(again, LLMJudge) and again.name == "openai:judge-x"
    assert isinstance(create_judge("oracle"), LLMJudge)  # a bare backend prefix is a backend spec, as before
    assert judge_of("gemini:gemini-2.5-flash") == ("llm", "gemini:gemini-2.5-flash")


def test_a_registered_judge_is_created_by_name_with_its_argument_and_settings() -> None:
    @register_judge("test-constant")
    def constant(arg: str, settings: JudgeSettings) -> Constant:
        return Constant(arg or "Yes", settings)

    judge = create_judge("test-constant:No", max_attempts=4, protocol=get_protocol("paper"))
    assert isinstance(judge, Constant) and judge.answer == "No"
    assert judge.settings.max_attempts == 4 and judge.settings.protocol.name == "paper"
    verdict = asyncio.run(judge.judge("anything", ROUND, 1))
    assert verdict.verdicts == {"A1": "No", "A2": "No"}
    assert create_judge("test-constant").answer == "Yes"
    with pytest.raises(DuplicateNameError, match="'offline' is registered twice"):
        register_judge("offline")(constant)
    assert mtvbench.register_judge is register_judge


def test_a_mistyped_judge_name_is_one_error_with_a_suggestion() -> None:
    with pytest.raises(UnknownJudgeError, match=r"unknown judge 'ofline' \(did you mean 'offline'\?"):
        create_judge("ofline")
