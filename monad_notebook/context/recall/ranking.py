"""How recall's rankings become one and how its passages are ordered: what its stages compute.

``fuse`` and ``fuse_rankings`` are reciprocal-rank fusion, weighted by how well each hit
matches; ``beside_better`` lifts a message said next to a better-placed one; ``varied`` puts one
passage of each kind first. The stages that call them
(``search.py``) say which question each answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from monad_notebook.context.recall.tuning import TUNING, RecallTuning
from monad_notebook.store.base import EmbeddingHit

_KIND_TOKEN = re.compile(r"[A-Za-z_][\w.]*")


@dataclass
class Passage:
    """One chunk recall found: the hit, its fused score, and which search found it."""

    hit: EmbeddingHit
    score: float
    cosine: float | None = None  # the vector search found it, at this similarity
    by_words: bool = False  # the full-text search found it


def fuse(
    by_words: list[EmbeddingHit],
    by_meaning: list[EmbeddingHit],
    terms: Sequence[str] = (),
    by_word_meaning: Sequence[EmbeddingHit] = (),
    tuning: RecallTuning = TUNING,
) -> list[Passage]:
    """Reciprocal-rank fusion, each hit weighted by how well it matches; one passage per message, best first.

    A full-text hit counts by the share of the question's words it holds (when ``terms`` are
    given), a vector hit by how far its similarity stands above noise (``vector_floor`` to
    ``vector_full``): plain rank fusion puts a passage that shares one common word with a
    question asked in other words level with the vectors' best. A message several rankings found
    keeps the chunk of the one that ranked it highest. Hits ranked by ``by_word_meaning``
    (``wordmatch.rank_by_words``) count by their rank alone.
    """
    by_words, by_meaning = distinct(by_words), distinct(by_meaning)
    passages: dict[str, Passage] = {}
    best_rank: dict[str, int] = {}
    floor, full, k = tuning.vector_floor, tuning.vector_full, tuning.rrf_k
    for rank, hit in enumerate(by_words):
        share = coverage(hit.snippet, terms) if terms else 1.0
        _count(passages, best_rank, hit, rank, share, k).by_words = True
    for rank, hit in enumerate(by_meaning):
        weight = min(1.0, max(0.0, (hit.score - floor) / (full - floor)))
        _count(passages, best_rank, hit, rank, weight, k).cosine = hit.score
    for rank, hit in enumerate(by_word_meaning):
        _count(passages, best_rank, hit, rank, 1.0, k)
    return ranked(passages.values())


def fuse_rankings(rankings: Sequence[list[Passage]], tuning: RecallTuning = TUNING) -> list[Passage]:
    """Several phrasings' fused rankings as one, by rank: each passage keeps its best-placed chunk and its cosine.

    Ranks, not scores, are summed: one phrasing's scores say nothing about another's.
    """
    passages: dict[str, Passage] = {}
    best_rank: dict[str, int] = {}
    for ranking in rankings:
        for rank, found in enumerate(ranking):
            passage = _count(passages, best_rank, found.hit, rank, 1.0, tuning.rrf_k)
            if found.cosine is not None:
                passage.cosine = max(passage.cosine or 0.0, found.cosine)
            passage.by_words |= found.by_words
    return ranked(passages.values())


def ranked(passages: Iterable[Passage]) -> list[Passage]:
    """Best score first, then the newest."""
    return sorted(passages, key=lambda p: (-p.score, -p.hit.seq))


def _count(
    passages: dict[str, Passage], best_rank: dict[str, int], hit: EmbeddingHit, rank: int, weight: float, k: int
) -> Passage:
    """Add ``weight`` at ``rank`` to the hit's message; it shows the chunk of the ranking that placed it highest."""
    found = passages.get(hit.message_id)
    if found is None:
        found = passages[hit.message_id] = Passage(hit, 0.0)
        best_rank[hit.message_id] = rank
    elif rank < best_rank[hit.message_id]:
        found.hit = hit
        best_rank[hit.message_id] = rank
    found.score += place(rank, k, weight)
    return found


def place(rank: int, k: int, weight: float = 1.0) -> float:
    """What ``rank`` (0 for the first) counts for in a reciprocal-rank fusion of constant ``k``."""
    return weight / (k + rank + 1)


def beside_better(passages: list[Passage], share: float, k: int) -> list[Passage]:
    """``passages`` again, each user's or agent's message gaining ``share`` of the place of the message said just
    before or after it when that one is placed higher, never passing it; tool outputs neither gain nor lend.

    Places count as the fusion counts ranks (``place``). The sort is stable, so a passage level
    with the one that lent to it stays after it.
    """
    placed = {p.hit.seq: place(rank, k) for rank, p in enumerate(passages)}
    said = {p.hit.seq: placed[p.hit.seq] for p in passages if p.hit.role != "tool"}
    for passage in passages:
        seq = passage.hit.seq
        lent = max((said.get(n, 0.0) for n in (seq - 1, seq + 1) if seq in said), default=0.0)
        passage.score = min(placed[seq] + share * lent, lent) if lent > placed[seq] else placed[seq]
    return sorted(passages, key=lambda p: -p.score)


def first_of_each(hits: list[EmbeddingHit]) -> list[EmbeddingHit]:
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


def distinct(hits: Iterable[EmbeddingHit]) -> list[EmbeddingHit]:
    """The first of each text: a request asked again or an output printed twice says nothing new.

    Repeats would otherwise fill the answer (nine copies of "Clean up the date columns." for
    a question about a date column) and push a match that differs out of it.
    """
    kept: dict[str, EmbeddingHit] = {}
    for hit in hits:
        kept.setdefault(" ".join(hit.snippet.split()), hit)
    return list(kept.values())


def varied(passages: list[Passage], names: Sequence[str] = (), alike: float = TUNING.alike) -> list[Passage]:
    """One passage of each kind first, then the others in their order; none is dropped.

    Rows of tables that share their columns, or lines of one listing, sit near many questions
    and would fill the answer with one thing said several times, pushing out the passage that
    differs. Two passages are of one kind when they share ``alike`` of their words, digits
    blanked. A passage holding an identifier the question names keeps its place.
    """
    first: list[Passage] = []
    later: list[Passage] = []
    kinds: list[frozenset[str]] = []
    for passage in passages:
        kind = _kind_of(passage.hit.snippet)
        if not names_in(passage.hit.snippet, names) and any(_alike(kind, seen, alike) for seen in kinds):
            later.append(passage)
        else:
            kinds.append(kind)
            first.append(passage)
    return first + later


def _kind_of(text: str) -> frozenset[str]:
    """What a passage is made of: its words, digits blanked (a table row of numbers has none)."""
    return frozenset(re.sub(r"\d+", "0", t.lower()) for t in _KIND_TOKEN.findall(text))


def _alike(a: frozenset[str], b: frozenset[str], share: float) -> bool:
    if not a or not b:
        return not a and not b
    return len(a & b) / len(a | b) >= share
