"""What makes a model's briefing too weak to keep, beyond a missing heading or a cut-off answer.

A small fast model can answer with all five headings and still fail the job: nothing under them,
one line written over and over, the transcript pasted back instead of summarized, or more text
than it was asked to fold. Kept,
such a briefing either forgets the span or does not shrink the window, so it is rejected
(retried once, then replaced by the extractive briefing, as ``summarize.py`` does for a missing
section). Each check reads only the sections' own text: the identifier ledger is the compactor's
and is attached again whichever briefing is kept.
"""

from __future__ import annotations

import re
from collections import Counter

from monad_notebook.context.compaction.ledger_text import strip_ledger

COPY_RUN = 8  # words in a row found in the transcript that count as pasted rather than summarized
# a line this many times in one briefing: a small model stuck in a loop (seen: one sentence three times over)
REPEATS = 3
COPY_SHARE = 0.5  # share of a briefing's words inside such runs that makes it a copy of the transcript
# characters a briefing may hold beyond what it folds: one short line (60) for each of its five sections,
# so a span of a few sentences still gets its briefing, while one that outgrows a real span is caught
ALLOWANCE = 300
_WORD = re.compile(r"[^\W_]+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.M)


def body(briefing: str) -> str:
    """The briefing's own words: without its headings and without an identifier ledger."""
    return strip_ledger(_HEADING.sub("", briefing)).strip()


def weakness(briefing: str, *, transcript: str, previous: str = "") -> str | None:
    """Why ``briefing`` (all five headings present) cannot replace ``previous`` plus ``transcript``; None if it can.

    ``transcript`` is the span as the model was given it; ``previous`` the briefing it merges
    with (its words may be kept verbatim, so they never count as copied). A reflection has no
    transcript: it must only not be empty nor longer than the briefing it condenses.
    """
    own = body(briefing)
    if not _WORD.search(own):
        return "it is empty: nothing under its headings"
    repeats = most_repeated(own)
    if repeats >= REPEATS:
        return f"it repeats one line {repeats} times"
    if transcript and copied_share(own, transcript) >= COPY_SHARE:
        return "it copies the transcript instead of summarizing it"
    folded = len(body(previous)) + len(transcript)
    if folded and len(own) > folded + ALLOWANCE:
        return f"it is longer than what it summarizes ({len(own):,} characters for {folded:,})"
    return None


def most_repeated(text: str) -> int:
    """How often the most frequent line of ``COPY_RUN`` words or more occurs (case, bullets and spaces aside)."""
    lines = [" ".join(_WORD.findall(line.lower())) for line in text.splitlines()]
    counts = Counter(line for line in lines if line.count(" ") + 1 >= COPY_RUN)
    return max(counts.values(), default=0)


def copied_share(text: str, source: str, run: int = COPY_RUN) -> float:
    """The share of ``text``'s words that sit in runs of ``run`` or more words found in ``source`` as they are."""
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < run:
        return 0.0
    source_words = [w.lower() for w in _WORD.findall(source)]
    seen = {tuple(source_words[i : i + run]) for i in range(len(source_words) - run + 1)}
    copied = [False] * len(words)
    for i in range(len(words) - run + 1):
        if tuple(words[i : i + run]) in seen:
            copied[i : i + run] = [True] * run
    return sum(copied) / len(words)
