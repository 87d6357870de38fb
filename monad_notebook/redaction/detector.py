"""One secret detector and its scan: an RE2 pattern, a keyword prefilter and a checker.

The detectors themselves live in ``token_rules``, ``secret_rules`` and ``key_rules``; the redactor runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import re2

_RESCAN_BYTES = 256
_UNANCHORED = re2._Anchor.UNANCHORED

Spans = list[tuple[int, int]]
Find = tuple[str, int, int]
Checker = Callable[[bytes, Spans], "list[Find]"]


@dataclass(frozen=True)
class Rule:
    """One detector: ``kind`` names the placeholder, ``keywords`` gate the scan, ``check`` vets each match."""

    kind: str
    regex: Any
    keywords: tuple[bytes, ...] = ()
    group: int = 0
    check: Checker | None = None
    rescan: bool = False  # after a rejected match, search again from the end of group 1 (the name)


def compile_pattern(pattern: str | bytes) -> Any:
    """RE2 over bytes, so offsets index the UTF-8 text the redactor rewrites."""
    return re2.compile(pattern if isinstance(pattern, bytes) else pattern.encode())


def rule(
    kind: str, pattern: str, keywords: str, group: int = 0, check: Checker | None = None, rescan: bool = False
) -> Rule:
    """A built-in rule: ``keywords`` is a space-separated list of lower-case prefilter words."""
    return Rule(kind, compile_pattern(pattern), tuple(k.encode() for k in keywords.split()), group, check, rescan)


def scan(rule: Rule, data: bytes) -> Iterator[Find]:
    """Accepted finds of one rule, left to right.

    Uses the raw binding: a match object per hit costs more than the scan. A rejected match of a
    ``rescan`` rule is searched again from the end of its name, so a value that swallowed a real
    assignment (``auth:x-api-key=...``) does not hide it; only short values are rescanned, which
    keeps the whole scan linear.
    """
    raw, pos, end = rule.regex._regexp, 0, len(data)
    while pos <= end:
        groups = raw.Match(_UNANCHORED, data, pos, end)
        start, stop = groups[0]
        if start < 0:
            return
        hits = rule.check(data, groups) if rule.check else [(rule.kind, *groups[rule.group])]
        yield from hits
        if not hits and rule.rescan and stop - groups[1][1] <= _RESCAN_BYTES:
            pos = groups[1][1]
            continue
        pos = stop if stop > start else stop + 1
