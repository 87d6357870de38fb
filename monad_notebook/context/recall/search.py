"""Recall by meaning and by words over a session's whole history: one pipeline, two uses.

A forgotten identifier cannot be searched for by its exact text, only by what surrounded it
("which file was the churn raw extract?"). So a question goes through one visible pipeline:

    gather    BM25 full-text over the session's chunks (``context/recall/chunks.py``; snake_case
              and dotted names are split into words by the index), and the embedder's vectors,
              which find paraphrases; each brings four times the passages the caller shows
    fuse      reciprocal-rank fusion, each hit weighted by how well it matches; with other
              phrasings of the question (the ``recall`` tool's ``also``), each is gathered and
              fused on its own, then the rankings are fused by rank
    steps     named rerank steps, in order, each switchable (``context.recall.steps``):
              ``word_meaning``, ``names_first``, ``one_of_each``

Each step is a small function whose docstring says what question it answers. LanceDB's own
hybrid query and reranker interface are not used: its rerankers see one ranked list of rows,
while the fusion and these steps need the question's parsed parts (its words, the identifiers
it names, each of its phrasings) and the session's word vectors, and must skip what the window
shows inside both searches. The ``recall`` tool answers with the passages; the per-turn
``<related_context>`` block (``retrieval.py``) runs the same object and keeps the ones it trusts.

What the window already shows is skipped inside both searches: a user or assistant message
in the window whole, a tool result's chunk only when its text is visible, so the hidden middle
of a truncated result stands for it even when its visible head matches better.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from monad_notebook.context.recall.wordmatch import MAX_TERMS, STOP_WORDS, WordVectors, rank_by_words
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import Embedder
from monad_notebook.store.base import EmbeddingHit, Store
from monad_notebook.store.rows import words

log = logging.getLogger(__name__)

RRF_K = 20
CANDIDATES = 4  # each search brings this many times the passages asked for, so fusion has a choice
WORD_POOL = 200  # with word vectors, each search brings this many to match word by word
QUERY_MAX_CHARS = 2000
VECTOR_FLOOR = 0.2  # below this cosine a vector hit is noise, even when asked for explicitly
VECTOR_FULL = 0.6  # at or above this cosine a vector hit counts in full
_TOKEN = re.compile(r"[\w][\w.:/-]*[\w]")
MAX_NAMES = 6
MAX_ALSO = 3  # other phrasings of one question searched with it
T = TypeVar("T")
STEPS = ("word_meaning", "names_first", "one_of_each")  # in the order they run


@dataclass(frozen=True)
class Question:
    """What the rerank steps read of a question: the identifiers it names, in any of its phrasings."""

    names: list[str]


@dataclass
class Passage:
    """One chunk recall found: the hit, its fused score, and which search found it."""

    hit: EmbeddingHit
    score: float
    cosine: float | None = None  # the vector search found it, at this similarity
    by_words: bool = False  # the full-text search found it


def identifier_terms(query: str) -> list[str]:
    """The words of ``query`` that name one thing: ids, file names, snake_case columns, long numbers.

    Sentence embeddings place "order ORD-48213" next to every other order, so a passage holding
    one of these verbatim is trusted whatever its similarity. Plain words (and short numbers
    such as years) are left to the vector.
    """
    terms: list[str] = []
    for token in _TOKEN.findall(query):
        token = token.rstrip(".:/-")
        named = any(c.isdigit() for c in token) or "_" in token or re.search(r"[A-Za-z]\.[A-Za-z]", token)
        if len(token) >= 4 and named and not (token.isdigit() and len(token) < 5) and token not in terms:
            terms.append(token)
    return terms[:MAX_NAMES]


def query_terms(query: str) -> list[str]:
    """The query's content words, lowercased: what a passage should contain (stop words left out)."""
    terms = [w.lower() for w in words(query) if len(w) >= 3]
    return list(dict.fromkeys(w for w in terms if w not in STOP_WORDS))


class Recall:
    """Searches one session's indexed chunks by words and by meaning, fuses the rankings, then runs the steps.

    With ``words`` (vectors of the session's words, ``wordmatch.py``) and the ``word_meaning``
    step on, a third ranking matches the question's words to each passage's by meaning, over a
    wider pool of what the vector search brings (``WORD_POOL``) and what the full-text search brings.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        words: WordVectors | None = None,
        steps: Sequence[str] = STEPS,
    ) -> None:
        unknown = sorted(set(steps) - set(STEPS))
        if unknown:
            raise ValueError(f"unknown recall steps {unknown}; the steps are {', '.join(STEPS)}")
        self.store = store
        self.embedder = embedder
        self.steps = tuple(s for s in STEPS if s in steps)
        self.words = words if "word_meaning" in self.steps else None

    def search(
        self,
        session: str,
        query: str,
        k: int,
        *,
        also: Sequence[str] = (),
        window: Iterable[Message] = (),
        shown: int | None = None,
    ) -> list[Passage]:
        """Up to ``k`` passages for ``query``, best first, none the window already shows.

        ``also``: other ways to ask the same thing (up to ``MAX_ALSO``), such as the words the
        session may have used instead of the user's. Each phrasing is gathered and fused on its
        own, and the rankings are fused again by rank, so a passage one phrasing finds well keeps
        its place whatever the others find; the steps then run once, on the question's parts
        from every phrasing.

        ``shown``: how many of them the caller will show at most (default ``k``), which sets how
        many each search brings. A caller that asks for more than it shows, to filter them, does
        not make the searches read more: each message a search brings costs rows read, and at
        100k stored messages a vector search reads two rows per message and reorders four by
        their full vectors.

        Either search failing leaves the other's results; both failing raises the last error.
        """
        phrasings = list(dict.fromkeys(q for q in (query, *also[:MAX_ALSO]) if q.strip()))
        if k <= 0 or not phrasings:
            return []
        hidden, partial = _visibility(window)
        wanted = CANDIDATES * (min(k, shown) if shown else k)
        rankings = [self._gathered(session, q, wanted, hidden, partial) for q in phrasings]
        passages = rankings[0] if len(rankings) == 1 else fuse_rankings(rankings)
        question = Question(identifier_terms(" ".join(phrasings)))
        for step in self.steps:
            if step in RERANK:
                passages = RERANK[step](passages, question)
        return passages[:k]

    def _gathered(
        self, session: str, query: str, wanted: int, hidden: set[str], partial: dict[str, str]
    ) -> list[Passage]:
        """One phrasing's passages: both searches (and the word ranking) fused, before the steps."""
        terms = query_terms(query)
        words = " ".join(terms) or query
        wide = max(wanted, WORD_POOL) if self.words is not None and self.embedder is not None else wanted
        errors: list[Exception] = []
        words_search = _pool().submit(
            self._safely,
            errors,
            lambda: self.store.search_chunks(session, words, wide, exclude_ids=hidden, shown=partial),
        )
        matching = terms[:MAX_TERMS]
        nearest = self._safely(errors, lambda: self._nearest(session, query, matching, wanted, hidden, partial))
        word_hits = words_search.result() or []
        by_words = word_hits[:wanted]
        if len(errors) == 2 or (errors and self.embedder is None):
            raise errors[-1]
        by_message, pool, term_vectors = nearest or ([], [], None)
        by_meaning = [h for h in by_message if h.score >= VECTOR_FLOOR]
        matched: list[EmbeddingHit] = []
        if term_vectors is not None and self.words is not None:
            matched = _first_of_each(rank_by_words(matching, term_vectors, [*pool, *word_hits], self.words))
        return fuse(by_words, by_meaning, terms, matched[:wanted])

    def _nearest(
        self, session: str, query: str, terms: list[str], k: int, hidden: set[str], partial: dict[str, str]
    ) -> tuple[list[EmbeddingHit], list[EmbeddingHit], np.ndarray | None]:
        """The ``k`` nearest messages; with word vectors, also the ``WORD_POOL`` nearest chunks and the terms' vectors.

        The question and the terms without a learnt vector are embedded in one call. The
        messages come from the chunks when these hold ``k`` of them (one read), as they do
        unless a few long outputs fill the pool.
        """
        if self.embedder is None:
            return [], [], None
        unknown = self.words.unknown(terms) if self.words is not None else []
        vectors = self.embedder.embed([query[:QUERY_MAX_CHARS], *unknown])
        name = self.embedder.name
        chunks: list[EmbeddingHit] = []
        term_vectors = None
        if self.words is not None:
            self.words.learn(unknown, vectors[1:])
            term_vectors = self.words.matrix(terms, len(vectors[0]))
            chunks = self.store.search_embeddings(
                session, vectors[0], max(k, WORD_POOL), model=name, exclude_ids=hidden, shown=partial, each_chunk=True
            )
        by_message = _first_of_each(chunks)[:k]
        if len(by_message) < k:
            by_message = self.store.search_embeddings(
                session, vectors[0], k, model=name, exclude_ids=hidden, shown=partial
            )
        return by_message, chunks, term_vectors

    @staticmethod
    def _safely(errors: list[Exception], search: Callable[[], T]) -> T | None:
        try:
            return search()
        except Exception as exc:
            log.debug("one recall search failed: %s", exc)
            errors.append(exc)
            return None


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """Threads for the full-text search, so it runs while the question is embedded."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="monad-recall")
        return _POOL


def fuse(
    by_words: list[EmbeddingHit],
    by_meaning: list[EmbeddingHit],
    terms: Sequence[str] = (),
    by_word_meaning: Sequence[EmbeddingHit] = (),
) -> list[Passage]:
    """Reciprocal-rank fusion, each hit weighted by how well it matches; one passage per message, best first.

    A full-text hit counts by the share of the question's words it holds (when ``terms`` are
    given), a vector hit by how far its similarity stands above noise (``VECTOR_FLOOR`` to
    ``VECTOR_FULL``): plain rank fusion puts a passage that shares one common word with a
    question asked in other words level with the vectors' best. A message several rankings found
    keeps the chunk of the one that ranked it highest. Hits ranked by ``by_word_meaning``
    (``wordmatch.rank_by_words``) count by their rank alone.
    """
    by_words, by_meaning = distinct(by_words, _hit_text), distinct(by_meaning, _hit_text)
    passages: dict[str, Passage] = {}
    best_rank: dict[str, int] = {}
    for rank, hit in enumerate(by_words):
        share = coverage(hit.snippet, terms) if terms else 1.0
        _count(passages, best_rank, hit, rank, share).by_words = True
    for rank, hit in enumerate(by_meaning):
        weight = min(1.0, max(0.0, (hit.score - VECTOR_FLOOR) / (VECTOR_FULL - VECTOR_FLOOR)))
        _count(passages, best_rank, hit, rank, weight).cosine = hit.score
    for rank, hit in enumerate(by_word_meaning):
        _count(passages, best_rank, hit, rank, 1.0)
    return ranked(passages.values())


def fuse_rankings(rankings: Sequence[list[Passage]]) -> list[Passage]:
    """Several phrasings' fused rankings as one, by rank: each passage keeps its best-placed chunk and its cosine.

    Ranks, not scores, are summed: one phrasing's scores say nothing about another's.
    """
    passages: dict[str, Passage] = {}
    best_rank: dict[str, int] = {}
    for ranking in rankings:
        for rank, found in enumerate(ranking):
            passage = _count(passages, best_rank, found.hit, rank, 1.0)
            if found.cosine is not None:
                passage.cosine = max(passage.cosine or 0.0, found.cosine)
            passage.by_words |= found.by_words
    return ranked(passages.values())


def ranked(passages: Iterable[Passage]) -> list[Passage]:
    """Best score first, then the newest."""
    return sorted(passages, key=lambda p: (-p.score, -p.hit.seq))


# --- the rerank steps (``word_meaning`` is a ranking of its own, gathered above) ---------------


def names_first(passages: list[Passage], question: Question) -> list[Passage]:
    """Does the passage hold verbatim an identifier the question gives (an order id, a file name)?

    Those come first: two weak matches summed must not bury the one message that names the
    order asked about.
    """
    return sorted(passages, key=lambda p: not names_in(p.hit.snippet, question.names))


def one_of_each(passages: list[Passage], question: Question) -> list[Passage]:
    """Is this passage another row of something already shown? Then it gives way to one that differs."""
    return varied(passages, question.names)


RERANK: dict[str, Callable[[list[Passage], Question], list[Passage]]] = {
    "names_first": names_first,
    "one_of_each": one_of_each,
}


def _count(
    passages: dict[str, Passage], best_rank: dict[str, int], hit: EmbeddingHit, rank: int, weight: float
) -> Passage:
    """Add ``weight`` at ``rank`` to the hit's message; it shows the chunk of the ranking that placed it highest."""
    found = passages.get(hit.message_id)
    if found is None:
        found = passages[hit.message_id] = Passage(hit, 0.0)
        best_rank[hit.message_id] = rank
    elif rank < best_rank[hit.message_id]:
        found.hit = hit
        best_rank[hit.message_id] = rank
    found.score += weight / (RRF_K + rank + 1)
    return found


def _first_of_each(hits: list[EmbeddingHit]) -> list[EmbeddingHit]:
    """Each message's first (best) hit, in order."""
    seen: set[str] = set()
    return [h for h in hits if not (h.message_id in seen or seen.add(h.message_id))]


def names_in(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` holds verbatim one of the identifiers the question names."""
    return any(name in text for name in names)


def coverage(text: str, terms: Sequence[str]) -> float:
    """The share of ``terms`` that ``text`` holds (``churn`` in churned too; the full-text index stems the rest)."""
    if not terms:
        return 0.0
    lowered = text.lower()
    return sum(term in lowered for term in terms) / len(terms)


def distinct(items: Iterable[T], text: Callable[[T], str]) -> list[T]:
    """The first of each text: a request asked again or an output printed twice says nothing new.

    Repeats would otherwise fill the answer (nine copies of "Clean up the date columns." for
    a question about a date column) and push a match that differs out of it.
    """
    seen: set[str] = set()
    kept = []
    for item in items:
        key = " ".join(text(item).split())
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


_KIND_TOKEN = re.compile(r"[A-Za-z_][\w.]*")
ALIKE = 0.4  # two passages sharing this share of their words (digits blanked) are of one kind


def kind_of(text: str) -> frozenset[str]:
    """What a passage is made of: its words, digits blanked (a table row of numbers has none)."""
    return frozenset(re.sub(r"\d+", "0", t.lower()) for t in _KIND_TOKEN.findall(text))


def alike(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return not a and not b
    return len(a & b) / len(a | b) >= ALIKE


def varied(passages: list[Passage], names: Sequence[str] = ()) -> list[Passage]:
    """One passage of each kind first, then the others in their order; none is dropped.

    Rows of tables that share their columns, or lines of one listing, sit near many questions
    and would fill the answer with one thing said several times, pushing out the passage that
    differs. A passage holding an identifier the question names keeps its place.
    """
    first: list[Passage] = []
    later: list[Passage] = []
    kinds: list[frozenset[str]] = []
    for passage in passages:
        kind = kind_of(passage.hit.snippet)
        if not names_in(passage.hit.snippet, names) and any(alike(kind, seen) for seen in kinds):
            later.append(passage)
        else:
            kinds.append(kind)
            first.append(passage)
    return first + later


def _hit_text(hit: EmbeddingHit) -> str:
    return hit.snippet


def _visibility(window: Iterable[Message]) -> tuple[set[str], dict[str, str]]:
    """Ids shown whole (skipped in the search) and tool results shown in part (id -> what is shown)."""
    hidden: set[str] = set()
    partial: dict[str, str] = {}
    for message in window:
        if message.role == "tool":
            if not message.evicted or message.images_cleared:
                partial[message.id] = message.content
        else:
            hidden.add(message.id)
    return hidden, partial


def focus(text: str, terms: list[str], chars: int) -> tuple[int, int]:
    """The ``chars``-long window of ``text`` holding the most distinct query terms (its start when none)."""
    if len(text) <= chars:
        return 0, len(text)
    lowered = text.lower()
    hits: list[tuple[int, str]] = []
    for term in terms:
        at = lowered.find(term)
        while at >= 0 and len(hits) < 200:
            hits.append((at, term))
            at = lowered.find(term, at + 1)
    if not hits:
        return 0, chars
    hits.sort()
    best, best_start = -1, 0
    for at, _ in hits:
        start = max(0, min(at - chars // 3, len(text) - chars))
        found = len({term for pos, term in hits if start <= pos < start + chars})
        if found > best:
            best, best_start = found, start
    return best_start, best_start + chars
