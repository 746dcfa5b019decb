"""Text similarity of captions (clip merging pre-filter, memory bank, theme links).

- :class:`LexicalSimilarity` (default, no extra dependency): cosine similarity of the
  bags of content words — lower-cased word tokens minus stop words, lightly stemmed, as
  in :func:`mtvbench.judge.offline.content_words` — in [0, 1].
- :class:`EmbeddingSimilarity`: cosine similarity of sentence embeddings from a
  ``sentence-transformers`` model (a local path or a model name the library can load),
  clipped to [0, 1]. Used when ``--text-embedder`` names a model; the library is imported
  lazily and its absence is a clear error.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import Protocol

from mtvbench.errors import MtvbenchError
from mtvbench.judge.offline import content_words


class TextSimilarity(Protocol):
    """How similar two texts are, from 0 (nothing shared) to 1; ``name`` is recorded in the artifacts."""

    name: str

    def similarity(self, a: str, b: str) -> float:
        """The similarity of ``a`` and ``b``, in 0..1."""
        ...


class LexicalSimilarity:
    """Text similarity by shared content words: the cosine of the two word counts, asks nothing."""

    name = "lexical"

    @staticmethod
    @lru_cache(maxsize=4096)
    def _bag(text: str) -> Counter[str]:
        return Counter(content_words(text))

    def similarity(self, a: str, b: str) -> float:
        """The cosine similarity of the content-word counts of ``a`` and ``b`` (0 when either has none)."""
        ba, bb = self._bag(a), self._bag(b)
        if not ba or not bb:
            return 0.0
        dot = sum(ba[w] * bb[w] for w in ba.keys() & bb.keys())
        return dot / (math.sqrt(sum(v * v for v in ba.values())) * math.sqrt(sum(v * v for v in bb.values())))


class EmbeddingSimilarity:
    """Text similarity by sentence embeddings (``--text-embedder MODEL``, sentence-transformers)."""

    def __init__(self, model: str):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MtvbenchError("--text-embedder needs sentence-transformers",
                                hint="install it with: pip install sentence-transformers") from e
        self.name = f"embedding:{model}"
        self.model = SentenceTransformer(model)
        self._cache: dict[str, list[float]] = {}

    def _vec(self, text: str) -> list[float]:
        if text not in self._cache:
            self._cache[text] = [float(x) for x in self.model.encode(text, normalize_embeddings=True)]
        return self._cache[text]

    def similarity(self, a: str, b: str) -> float:
        """The cosine of the two texts' normalised embeddings, clipped to 0..1."""
        va, vb = self._vec(a), self._vec(b)
        return max(0.0, min(1.0, sum(x * y for x, y in zip(va, vb))))


def make_textsim(embedder: str | None) -> TextSimilarity:
    """The build's text similarity: sentence embeddings with ``embedder``, else the lexical one."""
    return EmbeddingSimilarity(embedder) if embedder else LexicalSimilarity()
