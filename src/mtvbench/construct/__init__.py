"""The construction pipeline (paper §3.2, Appendix A): raw videos -> multi-turn dialogues + checklists.

Stages, one module each: split, caption, merge, keyframes, detect, objects (object captions +
memory bank), crossscene, score, generate, checklist_stage, export; ``workspace`` stores their
artifacts (fingerprinted, ``records``), ``journal`` every model reply as it arrives, ``llm`` the
model roles, ``pipeline`` runs the stages, ``cli.build_app`` is ``mtvbench build``.
"""
