"""The recitation anchor: the plan, re-pinned where the model generates.

After a compaction "what am I doing right now" is buried in the summary's prose. The
summary's ``## Open Tasks`` and ``## Next Step`` sections are lifted out and sent again at
the very end of the prompt, closest to the next token (``prompt.assemble`` wraps them in
``<plan>``). It is a per-turn stage: built once
from the rolling summary, so it never repeats within a turn. Sections are read with the
summarizer's own parser, so one parser defines the format.
"""

from __future__ import annotations

from monad_notebook.context.compaction.summarize import parse_sections

PLAN_SECTIONS = ("Open Tasks", "Next Step")
_EMPTY = frozenset({"", "none", "n/a", "na", "nothing", "-", "(none)", "none yet", "nothing yet"})


def plan_body(summary_text: str | None) -> str | None:
    """The Open Tasks / Next Step sections as Markdown, or None when the summary has neither."""
    if not summary_text:
        return None
    found = parse_sections(summary_text)
    parts = [f"## {name}\n{found[name]}" for name in PLAN_SECTIONS if not _empty(found.get(name, ""))]
    return "\n\n".join(parts) or None


def _empty(body: str) -> bool:
    return " ".join(body.lstrip("-*• ").split()).casefold().rstrip(".") in _EMPTY
