"""Words matched by meaning: the passage that says what a question asks, in other words.

A question asked in other words than the session used ("which file was the customer rating
held-out set?" for "saved review holdout sample -> ...") shares no word with the passage,
so full-text search cannot find it, and a sentence embedding places it far down: a passage
matching one half of the question well ("The review score is in column ...") scores above
one matching both halves a little (BENCHMARKS.md, "Words matched by meaning"). Matching word
by word rewards the passage that has a near word for each of the question's: each question
word counts by its nearest word in the passage (1 for the same word, else the cosine of the
two words' vectors), and the passage scores the mean. Recall's ``word_meaning`` stage ranks
a wide pool of what the two searches brought this way, and the fusion counts that ranking
with the other two.

Each word's vector is learnt once, in the background, from the text recall indexes
(``WordVectors``, filled by the indexer), so a search only looks them up; a word not learnt
yet matches only itself.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Iterable, Sequence

import numpy as np

from monad_notebook.context.recall.tuning import TUNING, RecallTuning
from monad_notebook.store.base import EmbeddingHit
from monad_notebook.store.rows import words

_DIGITS = re.compile(r"\d+")

MAX_WORDS = 50_000  # words kept per embedding model (float16 vectors), bounding the kernel's memory
_STOP_TEXT = (
    "the and for are was were what which who whom whose where when why how did does doing done has have had"
    " that this these those with from into onto about than then there their they them our ours your yours"
    " you can could should would will shall may might must been being its not but all any some one"
    " use used using get got out also just very more most much many such only own same too both each few"
    " other her him his she he we us me my mine is in on at to of by as be do an or if so up"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())  # matched by no passage; left out of full-text queries too


def words_of(text: str, tuning: RecallTuning = TUNING) -> set[str]:
    """The distinct words of ``text`` worth matching: its runs of letters, lowercased, stop words left out.

    Digits split a word (``churn2024`` gives ``churn``); a run longer than ``max_word_chars``
    counts as pieces of that length, and one shorter than ``min_word_chars`` not at all.
    """
    least, most = tuning.min_word_chars, tuning.max_word_chars
    found = set()
    for token in words(text):
        for letters in _DIGITS.split(token):
            pieces = range(0, len(letters) - least + 1, most)
            found.update(letters[i : i + most].lower() for i in pieces)
    return found - STOP_WORDS


class WordVectors:
    """Each word's vector from one embedding model, for matching words by meaning; thread-safe.

    Filled in the background by the recall indexer from every chunk it indexes; searches
    read it. Vectors are kept as float16 (their cosines move by less than 0.0001). It stops
    learning at ``MAX_WORDS``: a session's vocabulary grows slowly, so by then it holds the
    common words and each new one is rare.
    """

    def __init__(self, model: str, limit: int = MAX_WORDS) -> None:
        self.model = model
        self.limit = limit
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    @property
    def full(self) -> bool:
        return len(self._vectors) >= self.limit

    def unknown(self, words: Iterable[str]) -> list[str]:
        """The words without a vector yet, sorted (none once full)."""
        if self.full:
            return []
        return sorted(w for w in set(words) if w not in self._vectors)

    def learn(self, words: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        with self._lock:
            for word, vector in zip(words, vectors, strict=True):
                if len(self._vectors) >= self.limit:
                    break
                self._vectors[word] = np.asarray(vector, dtype=np.float16)

    def matrix(self, words: Sequence[str], dims: int) -> np.ndarray:
        """One row per word, in order: its vector, or zeros when it has none."""
        rows = np.zeros((len(words), dims), dtype=np.float32)
        for row, word in enumerate(words):
            vector = self._vectors.get(word)
            if vector is not None:
                rows[row] = vector
        return rows


_SHARED: dict[str, WordVectors] = {}
_SHARED_LOCK = threading.Lock()


def shared_word_vectors(model: str) -> WordVectors:
    """The kernel's word vectors for ``model``: a word's vector is the same in every session, so they share it."""
    with _SHARED_LOCK:
        return _SHARED.setdefault(model, WordVectors(model))


def rank_by_words(
    terms: Sequence[str],
    term_vectors: np.ndarray,
    hits: Sequence[EmbeddingHit],
    vectors: WordVectors,
    tuning: RecallTuning = TUNING,
) -> list[EmbeddingHit]:
    """``hits`` with words, best word-by-word match to ``terms`` first (see the module doc).

    ``term_vectors``: one row per term. A word starting with the term (``churn``: churned,
    churns) matches it fully; other forms match by their vectors, which place them close.
    """
    per_hit = [sorted(words_of(hit.snippet, tuning)) for hit in hits]
    kept = [(hit, words) for hit, words in zip(hits, per_hit, strict=True) if words]
    if not terms or not kept:
        return []
    vocabulary = sorted({w for _, words in kept for w in words})
    similar = term_vectors @ vectors.matrix(vocabulary, term_vectors.shape[1]).T
    for row, term in enumerate(terms):
        start = bisect.bisect_left(vocabulary, term)
        end = bisect.bisect_left(vocabulary, term + "\uffff", start)
        similar[row, start:end] = 1.0
    column = {word: at for at, word in enumerate(vocabulary)}
    columns = [column[w] for _, words in kept for w in words]
    starts = np.cumsum([0] + [len(words) for _, words in kept[:-1]])
    best = np.maximum.reduceat(similar[:, columns], starts, axis=1)  # terms x hits
    scores = best.mean(axis=0)
    order = sorted(range(len(kept)), key=lambda i: -scores[i])
    return [kept[i][0] for i in order]
