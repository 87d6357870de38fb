"""The months a question names ("on 13 October 2023", "in July", "2026-12-03"), and whether a message was written then.

A question that names a date asks about what was said then ("what did we try on 3 December?"),
and its words seldom say so: the date is not in the message, only in when it was written. So
recall's step ``dated_first`` puts the passages of messages written in a month the question names
first (``search.py``). The month, not the day: what happened on a day is often told days later
("on Friday we..."), and the day decided nothing on LoCoMo (BENCHMARKS.md). A month is of any year
unless one is given. A bare "May" or "March" counts only after a word that introduces a date ("in
May"), since both are also common words; numbers alone ("in 2023", "at 10") name nothing.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_NAMED = re.compile(
    rf"\b(\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?)?({'|'.join(_MONTHS)})\b(\s+\d{{1,2}}(?:st|nd|rd|th)?\b)?"
    r"(?:,?\s+(\d{4})\b)?",
    re.IGNORECASE,
)
_ISO = re.compile(r"\b(\d{4})-(0[1-9]|1[0-2])(?:-\d{2})?\b")
_AMBIGUOUS = {"may", "march"}
_INTRODUCES = re.compile(r"\b(?:in|during|since|until|till|by|of|early|late|mid|last|this|next|from|to)\s*-?$", re.I)


@dataclass(frozen=True)
class Month:
    """A month a question names, of one year or of any."""

    month: int
    year: int | None = None

    def holds(self, stamp: float) -> bool:
        """Was a message written at ``stamp`` (seconds, local time) in this month?"""
        if stamp <= 0:
            return False
        when = datetime.fromtimestamp(stamp)
        return when.month == self.month and self.year in (None, when.year)


def named_months(text: str) -> list[Month]:
    """The months ``text`` names, in the order it names them, each once."""
    found = [(m.start(), Month(int(m[2]), int(m[1]))) for m in _ISO.finditer(text)]
    for match in _NAMED.finditer(text):
        day_before, month, day_after, year = match.groups()
        bare = not (day_before or day_after or year)
        if bare and month.lower() in _AMBIGUOUS and not _INTRODUCES.search(text[: match.start()]):
            continue
        found.append((match.start(), Month(_MONTHS[month.lower()], int(year) if year else None)))
    return list(dict.fromkeys(month for _, month in sorted(found, key=lambda f: f[0])))
