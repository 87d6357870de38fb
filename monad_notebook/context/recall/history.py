"""The history check: what a session stored that the index does not hold yet.

The first time an indexer meets a session it compares the session's stored messages with the
index (one read of one column per table) and indexes what is missing: messages a kernel stored
but never indexed (it stopped with work queued, or crashed) and, after the embedding model (or
its passage prefix) changed, messages without a vector from the new one. What was embedded stays
embedded: a new process finds it in the store and leaves it.
"""

from __future__ import annotations

from monad_notebook.context.recall.backlog import Backlog
from monad_notebook.context.recall.chunks import indexed_text, worth_indexing
from monad_notebook.context.recall.tuning import TUNING
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import Embedder
from monad_notebook.store.base import SearchIndex, Transcript


def unindexed(
    transcript: Transcript, search: SearchIndex, backlog: Backlog, session: str, embedder: Embedder | None
) -> list[Message]:
    """The session's stored messages the index lacks, entered in ``backlog``: their words, and with ``embedder``
    (None: vectors are not made) their vectors from it.

    Ids first: a large session whose history is all indexed costs three reads of one column,
    not the texts of every message. Stored vectors are read again here: a remote model's width
    is learnt from its first answer, and until then none could be counted.
    """
    chunked = search.chunked_ids(session)
    vectors = None
    if embedder is not None:
        vectors = search.embedded_ids(session, model=embedder.name, dims=embedder.dims or None)
    done = backlog.indexed(session, chunked, vectors)
    missing = transcript.message_ids(session) - done
    stored = [m for m in transcript.load_messages(session, ids=missing) if worth_indexing(m)] if missing else []
    backlog.found(session, stored, {m.id: inputs_guess(m) for m in stored} if embedder is not None else None)
    return stored


def inputs_guess(message: Message) -> int:
    """About how many chunks a stored message makes, before its full text is read."""
    return max(1, len(indexed_text(message)) // TUNING.chunk_chars)
