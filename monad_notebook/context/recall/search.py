"""Recall by words and by meaning over a session's whole history: one list of stages, two uses.

A forgotten identifier cannot be searched for by its exact text, only by what surrounded it
("which file was the churn raw extract?"). So a question becomes ``Candidates`` (its phrasings
and their parsed parts, what each search brought, the passages so far) and goes through
``Recall.stages``, each taking and returning them, in this order:

    Gather        the searches, at once: ``ByWords`` (BM25 over the session's chunks, ``chunks.py``)
                  and ``ByMeaning`` (the embedder's vectors, which find paraphrases)
    WordMeaning   step ``word_meaning``: the question's words matched to each passage's by meaning
    Fuse          reciprocal-rank fusion of each phrasing's rankings, then of the phrasings'
    neighbours    step ``neighbours``: a user's or the agent's message gains part of the place of the message
                  said next to it, when that one was found higher (one thing is often said over two turns)
    dated_first   step ``dated_first``: a passage of a message written in a month the question names
                  ("on 3 December") comes first (``dates.py``)
    names_first   step ``names_first``: a passage naming an identifier the question gives comes first
    OneOfEach     step ``one_of_each``: another row of something already shown gives way

A step switched off in ``context.recall.steps`` leaves its stage out; the numbers are in
``RecallTuning`` (``tuning.py``). LanceDB's rerankers are the model for the shape (a small unit
per decision, built with its parameters) but are not used: they see one ranked list of rows,
not the question's parts. The ``recall`` tool answers with the passages; the
``<related_context>`` block (``retrieval.py``) runs the same object and keeps those it trusts.

What the window shows is skipped inside both searches: a user or assistant message whole, a
tool result's chunk only when its text is visible, so the hidden middle of a truncated result
stands for it even when its visible head matches better.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from monad_notebook.context.recall.dates import Month, named_months
from monad_notebook.context.recall.ranking import (
    Passage,
    beside_better,
    first_of_each,
    fuse,
    fuse_rankings,
    names_in,
    varied,
)
from monad_notebook.context.recall.tuning import TUNING, RecallTuning
from monad_notebook.context.recall.wordmatch import STOP_WORDS, WordVectors, rank_by_words
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import Embedder
from monad_notebook.provider.prefixes import as_documents, as_question
from monad_notebook.store.base import EmbeddingHit, SearchIndex
from monad_notebook.store.rows import words

log = logging.getLogger(__name__)

QUERY_MAX_CHARS = 2000  # of a question, embedded (the embedder reads less)
MAX_ALSO = 3  # other phrasings of one question searched with it, each costing both searches again
# the stages a config may switch off, in order
STEPS = ("word_meaning", "neighbours", "dated_first", "names_first", "one_of_each")
_TOKEN = re.compile(r"[\w][\w.:/-]*[\w]")
_SEARCHING = ThreadPoolExecutor(2, "monad-recall")  # the full-text search, while the question is embedded


@dataclass
class Phrasing:
    """One way the question was asked, and what each search and ranking brought for it, best first."""

    text: str
    terms: list[str]  # its content words (``query_terms``)
    by_words: list[EmbeddingHit] = field(default_factory=list)  # all the full-text search read
    by_meaning: list[EmbeddingHit] = field(default_factory=list)  # the nearest messages, above the floor
    nearest_chunks: list[EmbeddingHit] = field(default_factory=list)  # the wider read, for word meaning
    by_word_meaning: list[EmbeddingHit] = field(default_factory=list)
    vector: list[float] | None = None  # its embedding, once the vector search answered


@dataclass
class Candidates:
    """A question on its way through the stages: its phrasings, the identifiers they name, the passages so far."""

    session: str
    phrasings: list[Phrasing]
    names: list[str]  # identifiers any phrasing names (``identifier_terms``)
    months: list[Month]  # months the question names (``dates.named_months``)
    wanted: int  # passages each search brings
    hidden: set[str]  # ids the window shows whole, which the searches skip
    in_part: dict[str, str]  # tool results the window shows in part: id -> what it shows
    passages: list[Passage] = field(default_factory=list)


Stage = Callable[[Candidates], Candidates]
Search = Callable[[Candidates, Phrasing], None]


def identifier_terms(query: str, tuning: RecallTuning = TUNING) -> list[str]:
    """The words of ``query`` that name one thing: ids, file names, snake_case columns, long numbers.

    Sentence embeddings place "order ORD-48213" next to every other order, so a passage holding
    one of these verbatim is trusted whatever its similarity. Plain words (and short numbers
    such as years) are left to the vector.
    """
    terms: list[str] = []
    for token in _TOKEN.findall(query):
        token = token.rstrip(".:/-")
        named = any(c.isdigit() for c in token) or "_" in token or re.search(r"[A-Za-z]\.[A-Za-z]", token)
        short_number = token.isdigit() and len(token) < tuning.number_min_digits
        if len(token) >= tuning.name_min_chars and named and not short_number and token not in terms:
            terms.append(token)
    return terms[: tuning.max_names]


def query_terms(query: str, tuning: RecallTuning = TUNING) -> list[str]:
    """The query's content words, lowercased: what a passage should contain (stop words left out)."""
    terms = [w.lower() for w in words(query) if len(w) >= tuning.min_word_chars]
    return list(dict.fromkeys(w for w in terms if w not in STOP_WORDS))


class Recall:
    """One session's recall: the stages a question goes through, built from the steps switched on.

    ``words``: the session's word vectors (``wordmatch.py``) for ``word_meaning``, which needs the
    embedder too; ``tuning``: the numbers every stage uses.
    """

    def __init__(
        self,
        index: SearchIndex,
        embedder: Embedder | None,
        words: WordVectors | None = None,
        steps: Sequence[str] = STEPS,
        *,
        tuning: RecallTuning = TUNING,
    ) -> None:
        unknown = sorted(set(steps) - set(STEPS))
        if unknown:
            raise ValueError(f"unknown recall steps {unknown}; the steps are {', '.join(STEPS)}")
        self.index, self.embedder, self.tuning = index, embedder, tuning
        self.steps = tuple(s for s in STEPS if s in steps)
        self.words = words if "word_meaning" in self.steps else None

    @property
    def stages(self) -> list[Stage]:
        """The stages a question goes through, in order (built for each search, from the parts as they are now)."""
        tuning = self.tuning
        words = self.words if self.embedder is not None else None
        searches: list[Search] = [ByWords(self.index, tuning.word_pool if words is not None else 0)]
        if self.embedder is not None:
            searches.append(ByMeaning(self.index, self.embedder, tuning, words))
        steps_after = {
            "neighbours": Neighbours(tuning.neighbour_share, tuning.rrf_k),
            "dated_first": dated_first,
            "names_first": names_first,
            "one_of_each": OneOfEach(tuning.alike),
        }
        return [
            Gather(tuple(searches)),
            *([WordMeaning(words, tuning)] if words is not None else []),
            Fuse(tuning),
            *(steps_after[s] for s in self.steps if s in steps_after),
        ]

    def search(
        self,
        session: str,
        query: str,
        k: int,
        *,
        also: Sequence[str] = (),
        guesses: Sequence[str] = (),
        window: Iterable[Message] = (),
        shown: int | None = None,
    ) -> list[Passage]:
        """Up to ``k`` passages for ``query``, best first, none the window already shows.

        ``also``: other ways to ask the same thing (up to ``MAX_ALSO``), such as the words the
        session may have used instead of the user's; ``Fuse`` keeps a passage one phrasing finds
        well near the top whatever the others find, and the steps after it run once. ``guesses``:
        more of them (up to ``MAX_ALSO``, ``rewrite.py``), whose identifiers are guessed, not given,
        so ``names_first`` does not trust them.

        ``shown``: how many of them the caller will show at most (default ``k``), which sets how
        many each search brings: a caller asking for more than it shows, to filter them, does not
        make the searches read more rows.
        """
        asked = [query, *also[:MAX_ALSO]]
        texts = list(dict.fromkeys(q for q in (*asked, *guesses[:MAX_ALSO]) if q.strip()))
        if k <= 0 or not texts:
            return []
        phrasings = [Phrasing(text, query_terms(text, self.tuning)) for text in texts]
        wanted = self.tuning.candidates * (min(k, shown) if shown else k)
        names = identifier_terms(" ".join(asked), self.tuning)
        found = Candidates(session, phrasings, names, named_months(" ".join(asked)), wanted, *_visibility(window))
        for stage in self.stages:
            found = stage(found)
        return found.passages[:k]


# --- the stages, in the order they run ------------------------------------------------------


@dataclass(frozen=True)
class Gather:
    """What does each search bring for each phrasing?

    The searches run at once (the full-text search while the question is embedded). One failing
    leaves the others' hits; when every one fails for a phrasing, the last error is raised.
    """

    searches: tuple[Search, ...]

    def __call__(self, found: Candidates) -> Candidates:
        *others, last = self.searches
        for phrasing in found.phrasings:
            errors: list[Exception] = []
            running = [_SEARCHING.submit(_tried, errors, search, found, phrasing) for search in others]
            _tried(errors, last, found, phrasing)
            for search in running:
                search.result()
            if len(errors) == len(self.searches):
                raise errors[-1]
        return found


@dataclass(frozen=True)
class ByWords:
    """Which passages hold the question's words? BM25 over the session's chunks, each message's best chunk;
    at least ``at_least`` of them however few are wanted, for ``WordMeaning`` to rank."""

    index: SearchIndex
    at_least: int = 0

    def __call__(self, found: Candidates, phrasing: Phrasing) -> None:
        query, read = " ".join(phrasing.terms) or phrasing.text, max(found.wanted, self.at_least)
        phrasing.by_words = self.index.search_chunks(
            found.session, query, read, exclude_ids=found.hidden, shown=found.in_part
        )


@dataclass(frozen=True)
class ByMeaning:
    """Which passages mean what the question asks? The nearest messages by their vectors, above ``vector_floor``.

    With ``words`` (for ``WordMeaning``), the question's words without a learnt vector are
    embedded in the same call and learnt, and the ``word_pool`` nearest chunks are read: the
    messages come from those when they hold enough of them (one read).
    """

    index: SearchIndex
    embedder: Embedder
    tuning: RecallTuning
    words: WordVectors | None = None

    def __call__(self, found: Candidates, phrasing: Phrasing) -> None:
        wanted, words = found.wanted, self.words
        unknown = words.unknown(phrasing.terms[: self.tuning.max_terms]) if words is not None else []
        question = as_question(self.embedder, phrasing.text[:QUERY_MAX_CHARS])
        vector, *learnt = self.embedder.embed([question, *as_documents(self.embedder, unknown)])
        nearest = partial(self.index.search_embeddings, found.session, vector, model=self.embedder.name)
        skipped: dict[str, Any] = {"exclude_ids": found.hidden, "shown": found.in_part}
        chunks: list[EmbeddingHit] = []
        if words is not None:
            words.learn(unknown, learnt)
            chunks = nearest(max(wanted, self.tuning.word_pool), **skipped, each_chunk=True)
        by_message = first_of_each(chunks)[:wanted]
        if len(by_message) < wanted:
            by_message = nearest(wanted, **skipped)
        phrasing.nearest_chunks, phrasing.vector = chunks, vector
        phrasing.by_meaning = [h for h in by_message if h.score >= self.tuning.vector_floor]


@dataclass(frozen=True)
class WordMeaning:
    """Step ``word_meaning``: which passages match the question word by word, by meaning? (``wordmatch.py``)

    A third ranking, of the wider pool both searches read (the nearest chunks, then the full-text
    hits), each message once; none for a phrasing the vector search failed.
    """

    words: WordVectors
    tuning: RecallTuning

    def __call__(self, found: Candidates) -> Candidates:
        for phrasing in found.phrasings:
            if phrasing.vector is not None:
                terms = phrasing.terms[: self.tuning.max_terms]
                vectors = self.words.matrix(terms, len(phrasing.vector))
                pool = [*phrasing.nearest_chunks, *phrasing.by_words]
                ranked = rank_by_words(terms, vectors, pool, self.words, self.tuning)
                phrasing.by_word_meaning = first_of_each(ranked)[: found.wanted]
        return found


@dataclass(frozen=True)
class Fuse:
    """Which passages do the rankings agree on? Each phrasing's fused (``ranking.fuse``), then the phrasings'."""

    tuning: RecallTuning

    def __call__(self, found: Candidates) -> Candidates:
        rankings = [
            fuse(p.by_words[: found.wanted], p.by_meaning, p.terms, p.by_word_meaning, self.tuning)
            for p in found.phrasings
        ]
        found.passages = rankings[0] if len(rankings) == 1 else fuse_rankings(rankings, self.tuning)
        return found


@dataclass(frozen=True)
class Neighbours:
    """Step ``neighbours``: was the message said just before or after this passage's own found and placed higher?
    Then the passage gains ``share`` of that one's place (``ranking.beside_better``).

    What a user or the agent said often means something only with the message next to it: the
    answer to "what did she research?" follows the question that names the research, and a question's
    words find one of two messages that say the thing together. Only a better-placed message lends,
    and never so much that the passage passes it: a run of messages found together does not climb
    as one over a passage found alone, and the best match keeps its place. Tool outputs neither
    gain nor lend (a call's output is found by its own words). Only passages already found move,
    so nothing more is read.
    """

    share: float
    rrf_k: int

    def __call__(self, found: Candidates) -> Candidates:
        found.passages = beside_better(found.passages, self.share, self.rrf_k)
        return found


def dated_first(found: Candidates) -> Candidates:
    """Step ``dated_first``: was the passage's message written in a month the question names? Those come first
    ("what did we try on 3 December?" seldom shares a word with what was said then). ``names_first`` runs
    after it, so a named identifier still wins."""
    if found.months:
        found.passages = sorted(found.passages, key=lambda p: not any(m.holds(p.hit.created_at) for m in found.months))
    return found


def names_first(found: Candidates) -> Candidates:
    """Step ``names_first``: does the passage hold verbatim an identifier the question gives (an order id, a file)?

    Those come first: two weak matches summed must not bury the one message naming the order asked about.
    """
    found.passages = sorted(found.passages, key=lambda p: not names_in(p.hit.snippet, found.names))
    return found


@dataclass(frozen=True)
class OneOfEach:
    """Step ``one_of_each``: is this passage another row of something already shown? Then one that differs
    goes first (``ranking.varied``)."""

    alike: float

    def __call__(self, found: Candidates) -> Candidates:
        found.passages = varied(found.passages, found.names, self.alike)
        return found


# --- helpers ----------------------------------------------------------------------------------


def _tried(errors: list[Exception], search: Search, found: Candidates, phrasing: Phrasing) -> None:
    try:
        search(found, phrasing)
    except Exception as exc:
        log.debug("one recall search failed: %s", exc)
        errors.append(exc)


def shown_whole(window: Iterable[Message]) -> set[str]:
    """Ids of the messages the window shows whole: a search skips them (a tool result is searched for the rest)."""
    return {message.id for message in window if message.role != "tool"}


def _visibility(window: Iterable[Message]) -> tuple[set[str], dict[str, str]]:
    """Ids shown whole (skipped in the search) and tool results shown in part (id -> what is shown)."""
    window = list(window)
    in_part = {m.id: m.content for m in window if m.role == "tool" and (not m.evicted or m.images_cleared)}
    return shown_whole(window), in_part


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
