"""The core that evaluation (``run``) and construction (``construct``) share: one of each mechanism.

``lock`` (the only file-lock code), ``sqlite`` (the one SQLite set-up and version rule), ``keys`` (the one
digest). This package imports only ``errors`` and ``util``, so every layer above may use it.
"""
