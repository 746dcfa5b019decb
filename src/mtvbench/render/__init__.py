"""How results are shown: tables that fit any terminal, pipe or file (:mod:`.tables`), the
paper's Table 2 layout in every sink (:mod:`.leaderboard`), plots as PNG bytes (:mod:`.plots`),
the self-contained HTML page (:mod:`.html`) and the printing every command uses
(:mod:`.console`). Nothing here reads a run directory or asks a model."""
