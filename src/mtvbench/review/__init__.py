"""Human verification of dialogues (paper §3.2): two annotators per dialogue, a senior
settles disagreements, in a web app with the video beside the dialogue; and human raters of a
run's answers (paper §4.5, Table 3), who answer the checklists of a seeded sample as the judge does.

- :mod:`.decisions`: the records (items, decisions, edits, the paper's three criteria, checklist marks,
  decisions handed to the senior) and the outcome rule.
- :mod:`.source`: what is reviewed, a build workspace's queue or a released-layout dataset; or rated,
  a run directory (:mod:`.run_source`: its answers and the raters' sample).
- :mod:`.store`: the SQLite store (WAL) every decision and rating goes to, drafts, undo, users and tokens.
- :mod:`.views`: who sees what of an item (the blind rule of the double annotation; the rater's view).
- :mod:`.progress`: done / open per annotator and task, agreement per annotator pair (Cohen's kappa)
  and Krippendorff's alpha, active time per item.
- :mod:`.rating`: the raters' next dialogue, their progress and agreement, and the export that
  ``mtvbench agreement --human`` reads.
- :mod:`.diffs`: the annotators' edits side by side (word diffs).
- :mod:`.guidelines`: the guidelines beside the decision (built-in or the lead's Markdown, escaped).
- :mod:`.export`: the reviewed dataset in the released layout plus ``review.json``.
- :mod:`.app`: the Starlette app (pages, JSON API, video with range requests); needs
  ``pip install 'mtvbench[review]'``.
- :mod:`.server`: loopback checks and running the app with uvicorn.
"""
