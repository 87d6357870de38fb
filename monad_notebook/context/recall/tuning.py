"""Recall's tuning: every number that decides what recall indexes, finds and keeps, in one frozen object.

``Recall(..., tuning=replace(TUNING, rrf_k=40))`` asks with another value (as a benchmark
does); BENCHMARKS.md ("Fidelity", "Retrieval") shows how the values were chosen. Limits of
input stay where they are enforced: how much of a question is embedded and how many other
phrasings it may bring (``search.py``), how many words the kernel keeps vectors for
(``wordmatch.py``), and the store's own bounds on a query (``store/rows.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RecallTuning:
    """The numbers of one recall, each with what it is for; frozen, so one object is safely shared."""

    chunk_chars: int = 300
    """A chunk's length, a few lines of a log: a line embedded among a dozen others loses its meaning."""
    overlap_chars: int = 80
    """Each chunk overlaps the previous by at least this, so an identifier up to this long lies whole in one."""
    line_search: int = 200
    """How far back from a chunk's end a line end is looked for, so the chunk ends there."""
    word_search: int = 40
    """How far back a chunk's start moves to the start of its word, when no line starts near."""
    standout_share: int = 2
    """A tool output's lines that stand out are also embedded alone when they are at most 1/this of their chunk ..."""
    min_pattern_lines: int = 3
    """... and the output has at least this many lines of repeated patterns (among unlike lines none stands out)."""
    reply_context_chars: int = 300
    """The agent's reply directly after the user's message has its first chunk also embedded after this much of the
    end of that message: a reply answers what was asked just before it (``chunks.said_before``)."""

    min_word_chars: int = 3
    """Shorter words ("of", "id") are too common to search or match by."""
    max_word_chars: int = 30
    """A longer run of letters is matched by meaning as pieces of this many (an id, a hash)."""
    max_terms: int = 12
    """The question's words matched by meaning, its first ones: a long message is no question."""
    max_names: int = 6
    """Identifiers read from a question (ids, file names, snake_case columns), its first ones."""
    name_min_chars: int = 4
    """A shorter token names nothing in particular."""
    number_min_digits: int = 5
    """A shorter number (a year, a count) names nothing in particular; an order number does."""

    candidates: int = 4
    """Each search brings this many times the passages the caller shows, so fusion has a choice."""
    word_pool: int = 200
    """With ``word_meaning``, each search reads at least this many for the word-by-word match to rank."""
    vector_floor: float = 0.2
    """Below this cosine a vector hit is noise, however few others there are."""
    vector_full: float = 0.6
    """At or above this cosine a vector hit counts in full in the fusion; between the two, in part."""
    rrf_k: int = 20
    """Reciprocal-rank fusion's k: lower gives the first places of each ranking more weight over the rest."""
    neighbour_share: float = 0.3
    """``neighbours``: the share of a better-placed neighbouring message's fused place a passage gains."""
    alike: float = 0.4
    """``one_of_each``: two passages sharing this share of their words (digits blanked) are of one kind."""
    words_trusted: float = 0.5
    """``<related_context>``: a passage still without vectors holding this share of the request's words is a match."""


TUNING = RecallTuning()
