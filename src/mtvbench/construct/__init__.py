"""The construction pipeline (paper §3.2, Appendix A): raw videos -> multi-turn dialogues + checklists.

Stages, one module each, registered in :mod:`.stages` (``STAGES``): split, caption, merge,
keyframes, detect, objects (object captions + memory bank), crossscene, suitability (the ``score``
stage: task-suitability ratings 1-6), generate, checklists; then :mod:`.export` (released layout)
and :mod:`.review_queue` (the human review). ``workspace`` stores their artifacts (fingerprinted,
``records``), ``journal`` every model reply as it arrives, ``llm`` the model roles, ``config`` the
build settings, ``pipeline`` runs any registered stage; ``mtvbench build`` is
:mod:`mtvbench.cli.construct`.
"""
