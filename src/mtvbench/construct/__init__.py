"""The construction pipeline (paper §3.2, Appendix A): raw videos -> multi-turn dialogues + checklists.

Stages, one module each under :mod:`.stages` (registered in ``STAGES``): split, caption, merge,
keyframes, detect, objects (object captions + memory bank), crossscene, suitability (the ``score``
stage: task-suitability ratings 1-6), generate, checklists; each declares its artifact, its settings
model, its prompts and its model role. Then :mod:`.export` (released layout) and :mod:`.review_queue`
(the human review). ``workspace`` stores their artifacts (fingerprinted, ``records``), ``journal``
every model reply as it arrives, ``llm`` the model roles, ``detector`` the object detector, ``config``
the build settings (assembled from the stages), ``pipeline`` runs any registered stage; ``mtvbench
build`` is :mod:`mtvbench.cli.construct`.
"""
