"""The benchmark's data: its typed model (:mod:`.schema`), the released layout with its writer and
reader (:mod:`.layout`), the loader that checks every record (:mod:`.official`), the Hugging Face download
(:mod:`.hub`, :mod:`.archives`), the mark of a built dataset (:mod:`.buildmeta`), the released benchmark's
published shape (:mod:`.release`) and the bundled synthetic sample (``sample/``).
"""
