"""Semantic reinjection: bring back what eviction and summarization hid, when a turn needs it.

Once per turn the new user message is put to the session's ``Recall`` (``search.py``: the
stages that search its whole history by words and by meaning) and the passages it trusts
come back as a ``<related_context>`` block: those the vectors place above ``minScore``, those
holding verbatim a name the request gives (an id, a snake_case column, a file name), which a
sentence embedding cannot tell from its neighbours, and, while a message still waits for
its vectors, one that holds at least ``words_trusted`` of the request's words (``tuning.py``).

Best-effort by design: retrieval is an optimisation, so a missing embedder, a store hiccup
or an embedding failure yields no block, never a failed turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from monad_notebook.config import RetrievalConfig
from monad_notebook.context.recall.ranking import Passage, coverage
from monad_notebook.context.recall.search import Recall, identifier_terms, query_terms
from monad_notebook.messages import Message

log = logging.getLogger(__name__)

OPEN_TAG, CLOSE_TAG = "<related_context>", "</related_context>"
INTRO = (
    "Earlier messages from this session that may bear on the request below, found by similarity"
    " or by a name they share with it (they may be out of date; the window no longer shows them;"
    ' read_message({"seq": N}) pages back the whole of message #N):'
)


class Retrieval:
    """Finds earlier messages of one session that relate to a new user message."""

    def __init__(
        self, recall: Recall, cfg: RetrievalConfig, unembedded: Callable[[str], set[str]] = lambda _: set()
    ) -> None:
        """``recall``: the session's one recall pipeline, the ``recall`` tool's too; ``unembedded``: the ids
        of a session's messages still waiting for their vectors (found by their words meanwhile)."""
        self.recall = recall
        self.embedder = recall.embedder
        self.cfg = cfg
        self.unembedded = unembedded

    def related_context(
        self,
        session: str,
        query: str,
        window: Iterable[Message] = (),
        *,
        query_id: str | None = None,
        guesses: Sequence[str] = (),
    ) -> str | None:
        """The ``<related_context>`` block for ``query``, or None when there is nothing worth adding.

        What the window shows and the query's own message are skipped: repeating what the
        model can see wastes the budget this stage exists to save. ``guesses``: other phrasings
        of the query, searched with it (``Recall.search``).
        """
        if not self.cfg.enabled or self.embedder is None or not query.strip():
            return None
        try:
            passages = self._trusted(session, query, list(window), query_id, guesses)
        except Exception as exc:
            log.debug("retrieval skipped for this turn: %s", exc)
            return None
        return format_related(passages, self.cfg.snippet_chars) if passages else None

    def _trusted(
        self, session: str, query: str, window: list[Message], query_id: str | None, guesses: Sequence[str]
    ) -> list[Passage]:
        """Recall's passages naming the query's identifiers (first), then those above ``minScore``, and those
        still without vectors that hold enough of the query's words."""
        limit, tuning = self.cfg.max_results, self.recall.tuning
        terms = identifier_terms(query, tuning)
        asked = query.strip()
        unembedded = self.unembedded(session)
        words = query_terms(query, tuning) if unembedded else []
        named, near = [], []
        for passage in self.recall.search(session, query, 2 * limit + 1, guesses=guesses, window=window, shown=limit):
            hit = passage.hit
            if hit.message_id == query_id or hit.snippet.strip() == asked:
                continue
            if any(term in hit.snippet for term in terms):
                named.append(passage)
            elif (passage.cosine is not None and passage.cosine >= self.cfg.min_score) or (
                hit.message_id in unembedded and coverage(hit.snippet, words) >= tuning.words_trusted
            ):
                near.append(passage)
        return [*named, *near][:limit]


def format_related(passages: list[Passage], snippet_chars: int) -> str:
    """The block the model reads: one ``- `` line per hit, oldest first, each with role and ``#seq``."""
    lines = [OPEN_TAG, INTRO]
    for hit in sorted((p.hit for p in passages), key=lambda h: (h.seq, h.offset)):
        who = f"tool {hit.name}" if hit.role == "tool" and hit.name else hit.role or "message"
        lines.append(f"- [#{hit.seq} {who}, turn {hit.turn}] {_snippet(hit.snippet, snippet_chars)}")
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


def _snippet(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, cut at a word where one is near.

    Whitespace is collapsed so every hit stays one line (a hit's own newlines cannot pass
    for another hit), and the block's tags cannot be forged from inside a snippet.
    """
    text = " ".join(text.split()).replace(CLOSE_TAG, "</related-context>").replace(OPEN_TAG, "<related-context>")
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 0)]
    space = cut.rfind(" ")
    if space >= limit * 0.8:
        cut = cut[:space]
    return cut.rstrip() + "…"
