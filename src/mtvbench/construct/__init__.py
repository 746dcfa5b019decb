"""The construction pipeline (paper §3.2, Appendix A): raw videos -> multi-turn dialogues + checklists.

Stages, one module each under :mod:`.stages` (registered in ``STAGES``): split, caption, merge,
keyframes, detect, objects (object captions + memory bank), crossscene, suitability (task-suitability
ratings 1-6), generate, checklists; each declares its artifact, its settings model, its prompts and its
model role. Then :mod:`.export` (released layout) and :mod:`.review_queue` (the human review).
:mod:`.workspace` stores the stages' artifacts (:mod:`.artifacts`: what every artifact records of its
inputs), :mod:`.journal` every model reply as it arrives, :mod:`.calls` the model roles' calls,
:mod:`.detector` the object detector, :mod:`.config` the build settings (assembled from the stages), and
:mod:`.pipeline` runs any registered stage; ``mtvbench build`` is :mod:`mtvbench.cli.construct`.
"""
