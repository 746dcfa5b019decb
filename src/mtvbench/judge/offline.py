"""A documented, fully offline checklist judge (lexical matcher).

It exists so that ``mtvbench demo`` and the tests run without any API (:class:`OfflineJudge`,
``--judge offline``). It is NOT a substitute for an LLM judge and its numbers are not
comparable to the paper's.

Rule, per checklist question:

1. Strip the lead-in (``Does the model/answer/response state/mention/... that``) and keep
   the *content words*: lower-cased word tokens minus a fixed stop-word list, each reduced
   by a tiny suffix stemmer (``-ing``, ``-ed``, ``-es``, ``-s``), and numbers kept as they are.
2. The verdict is ``Yes`` when at least ``threshold`` (default 0.75) of those content words
   occur in the answer's content words, else ``No``.

A reversed-fact item ("a *blue* car" when the answer says red) loses its altered word and
falls under the threshold; an answer that talks about something else shares few words.
"""

from __future__ import annotations

import re

from mtvbench.data.schema import Round
from mtvbench.records import JudgeVerdict

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_LEAD_IN = re.compile(
    r"^\s*(?:does|did|is|has|do)\s+(?:the\s+)?(?:model|answer|response|assistant|bot|reply)(?:'s\s+answer)?\s+"
    r"(?:\w+ly\s+)?(?:\w+\s+)?(?:that\s+)?",
    re.IGNORECASE,
)
STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from into onto over under as is are was were be been
    being it its it's this that these those there here their them they he she his her him we you your our i me
    my do does did done has have had having not no yes can could would should will shall may might must than
    then so such very just also about which who whom whose what when where why how all any each both either
    more most some other only own same too up down out off again once during before after above below between
    through while video clip model answer response state states stated mention mentions mentioned say says
    said describe describes described identify identifies identified claim claims claimed indicate indicates
    indicated explain explains explained note notes noted specify specifies specified include includes
    included assert asserts asserted correctly explicitly clearly""".split()
)


def _stem(w: str) -> str:
    if w.isdigit() or len(w) <= 3:
        return w
    for suf in ("ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its content: lower-cased, stop words dropped, the endings -ing, -ed, -es and
    -s cut (the matcher's rule, module docstring)."""
    words = _WORD.findall(text.lower().replace("’", "'"))
    out = []
    for w in words:
        w = w.removesuffix("'s")
        if w in STOPWORDS:
            continue
        out.append(_stem(w))
    return out


def item_verdict(answer: str, question: str, threshold: float = 0.75) -> bool:
    """True (``Yes``) when the answer covers the question's content words."""
    body = _LEAD_IN.sub("", question, count=1)
    need = set(content_words(body))
    if not need:
        return False
    have = set(content_words(answer))
    return len(need & have) / len(need) >= threshold


def judge_items(answer: str, questions: list[str], threshold: float = 0.75) -> list[bool]:
    """The verdict on each of ``questions`` for ``answer`` (:func:`item_verdict`), in order."""
    return [item_verdict(answer, q, threshold) for q in questions]


class OfflineJudge:
    """The lexical matcher of rule above; deterministic, needs no API."""

    name = "offline"

    def __init__(self, threshold: float = 0.75):
        self.threshold = threshold

    async def judge(self, answer: str, rnd: Round, run: int) -> JudgeVerdict:
        """Judge ``answer`` against ``rnd``'s checklist: a Yes for each question whose content words the answer
        covers. Always one attempt, never a failure."""
        items = rnd.checklist or []
        verdicts = judge_items(answer, [it.question for it in items], self.threshold)
        return JudgeVerdict(run=run, status="ok", attempts=1,
                            verdicts={it.answer_key: ("Yes" if v else "No") for it, v in zip(items, verdicts)})

    async def aclose(self) -> None:
        """Nothing to release: the matcher holds no connection."""
        return None
