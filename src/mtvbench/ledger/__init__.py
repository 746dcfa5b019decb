"""The core that evaluation (``run``) and construction (``construct``) share: one of each mechanism.

``dispatch`` (who asks the model, and how each result gets back to the one writer: one lifecycle, one
pipeline, one chain rule), with its two implementations ``dispatch_local`` (this process) and
``dispatch_ray`` (a Ray cluster, for ``run`` and ``build`` alike).
"""
