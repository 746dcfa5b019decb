"""From stored verdicts to the benchmark's numbers, and what a run cost.

- :mod:`.aggregate`: turn -> dialogue -> task -> Overall scores with bootstrap confidence intervals
  (the ``scores.json`` contract);
- :mod:`.effects`: where the authors' eval.py reads a stored reply differently from the paper;
- :mod:`.usage`: calls, tokens, time and cost of a run directory, per role;
- :mod:`.tokens`: the prompt tokens a request will cost before it is sent (``mtvbench estimate``);
- :mod:`.human`: the human ratings file and the agreement among the humans;
- :mod:`.kappa`: Cohen's and Fleiss' kappa and Krippendorff's alpha.
"""
