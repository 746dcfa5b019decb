"""Human verification of dialogues (paper §3.2): two annotators per dialogue, a senior
settles disagreements, in a web app with the video beside the dialogue.

- :mod:`.model`: the records (items, decisions, edits, the paper's three criteria, checklist marks,
  decisions handed to the senior) and the outcome rule.
- :mod:`.source`: what is reviewed, a build workspace's queue or a released-layout dataset.
- :mod:`.store`: the SQLite store (WAL) every decision goes to, drafts, undo, users and tokens.
- :mod:`.views`: who sees what of an item (the blind rule of the double annotation).
- :mod:`.progress`: done / open per annotator and task, agreement per annotator pair (Cohen's kappa)
  and Krippendorff's alpha, active time per item.
- :mod:`.diffs`: the annotators' edits side by side (word diffs).
- :mod:`.guidelines`: the guidelines beside the decision (built-in or the lead's Markdown, escaped).
- :mod:`.export`: the reviewed dataset in the released layout plus ``review.json``.
- :mod:`.app`: the Starlette app (pages, JSON API, video with range requests); needs
  ``pip install 'mtvbench[review]'``.
- :mod:`.server`: loopback checks and running the app with uvicorn.
"""
