"""Human verification of dialogues (paper §3.2): two annotators per dialogue, a senior
settles disagreements, in a web app with the video beside the dialogue.

- :mod:`.model`: the records (items, decisions, edits) and the outcome rule.
- :mod:`.source`: what is reviewed, a build workspace's queue or a released-layout dataset.
- :mod:`.store`: the SQLite store (WAL) every decision goes to, users and tokens.
- :mod:`.progress`: done / open per annotator and task, Cohen's kappa, time per item.
- :mod:`.diffs`: the two annotators' edits side by side (word diffs).
- :mod:`.export`: the reviewed dataset in the released layout plus ``review.json``.
- :mod:`.app`: the Starlette app (pages, JSON API, video with range requests); needs
  ``pip install 'mtvbench[review]'``.
- :mod:`.server`: loopback checks and running the app with uvicorn.
"""
