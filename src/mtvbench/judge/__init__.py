"""Judges of a turn's answer against its checklist: the LLM judge (paper Figure 17,
:mod:`.llm`, replies read by :mod:`.verdicts`) and the offline lexical matcher (:mod:`.offline`);
:func:`mtvbench.judge.factory.create_judge` picks one by spec from the registry
(:mod:`.registry`: ``JUDGES``, entry-point group ``mtvbench.judges``)."""
