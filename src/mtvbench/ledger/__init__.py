"""What evaluation (``run``) and construction (``construct``) share, each mechanism in one module.

``lock`` (the only file-lock code), ``sqlite`` (the SQLite set-up and version rule of every store), ``keys``
(the digest every stored key uses). This package imports only ``errors`` and ``util``, so every layer above may use it.
"""
