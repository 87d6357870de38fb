"""What changed in a namespace since the last look: names bound, rebound, changed in place, deleted.

A name is remembered by the identity and type of its value and an O(1) signature (a frame's shape
and columns object, a list's length), never by a reference: holding one would keep a deleted
frame alive. Only a name whose fingerprint moved is described again.

A look's cost stops growing with the namespace at ``LOOK_NAMES`` names. It looks, in this order, at the names
the code that just ran mentions (where a call or a cell binds, rebinds and changes things), at
the names added since the last look (a dict keeps insertion order, so they are found walking back
from its end to the key that ended it last time), and at the next ``LOOK_NAMES`` of a round over
every name, which finds what the other two missed (a name changed by a function defined earlier,
a deletion) within ``n / LOOK_NAMES`` looks. A namespace of up to ``LOOK_NAMES`` names is looked
at whole every time, and so is any namespace at the first look (the record must know what is there).

Only plain ``str`` keys are names: another key (``globals()[1] = ...``, a str subclass with its own
``__hash__``) is counted and left alone. A look runs within ``LOOK_SECONDS`` (the python tool's
``TimeLimit``): the names not reached are looked at next time, and a value whose look raised, or
ran out of time twice, is told by its type only until its name holds another value.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from monad_notebook.time_limit import CodeTimedOut, TimeLimit
from monad_notebook.workspace.description import Description, describe, family, is_user_value, signature, type_name

LOOK_NAMES = 1_000  # names of the round looked at per look (and at most this many mentioned, and new)
LOOK_SECONDS = 0.5
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_MISSING = object()


@dataclass(frozen=True)
class Print:
    """A value's fingerprint: who it is, what it is, its family and its size."""

    ident: int
    kind: type
    of: str
    sig: Any


@dataclass(frozen=True)
class Change:
    """One name that changed, and what it holds now (``None`` once deleted)."""

    name: str
    state: str  # bound | rebound | changed | deleted
    about: Description | None = None


@dataclass
class Look:
    """What one look found: the changes, the names it had to skip (and why), and whether a round ended."""

    changes: list[Change] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    timed_out: bool = False
    round_ended: bool = False
    failed: str = ""  # the namespace itself could not be read


def _unchanged(old: Print | None, value: Any) -> bool:
    """The same value as at the last look, and nothing of it that could change is read (no need to look)."""
    return old is not None and old.sig is None and old.ident == id(value) and old.kind is type(value)


def mentioned(text: str) -> list[str]:
    """The identifiers a piece of code mentions, each once, at most ``LOOK_NAMES``."""
    return list(dict.fromkeys(_IDENTIFIER.findall(text)))[:LOOK_NAMES]


class Snapshot:
    """The fingerprints of a namespace's user names at the last look, and where the round over them stands."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Start over: the next look is a first look."""
        self.prints: dict[str, Print] = {}
        self.skipped: dict[str, int] = {}  # a name -> the id of the value whose look failed
        self.odd_keys = 0  # keys that are not plain strings, as the last round counted them
        self.rounds = 0  # rounds ended: after the first, every name has been looked at once
        self._round: list[Any] = []  # the namespace's keys as the round in progress started
        self._at = 0
        self._seen: set[str] = set()
        self._odd = 0
        self._last: Any = _MISSING  # the namespace's final key at the last look
        self._current: tuple[str, Any, Print | None] | None = None  # the name being looked at, its value, its print
        self._suspect: tuple[str, int] | None = None  # the name and value a look last ran out of time on

    def take(self, namespace: Mapping[Any, Any], hidden: Mapping[str, Any], names: Iterable[str] = ()) -> Look:
        """What changed since the last look (everything, over the first round), ``names`` looked at first."""
        look = Look()
        collecting = gc.isenabled()
        gc.disable()  # a collection's pause is not the look's, nor may a finalizer it runs receive the time-out
        try:
            with TimeLimit(LOOK_SECONDS, "the workspace record's look"):
                self._look(namespace, hidden, names, look)
        except CodeTimedOut:
            look.timed_out = True
            self._blame(look)
        except Exception as exc:  # a namespace that is not a plain dict and fails to be read
            look.failed = f"{type_name(type(exc))}: {exc}"
        finally:
            if collecting:
                gc.enable()
        self._current = None
        return look

    @property
    def pending(self) -> int:
        """Names of the round in progress not looked at yet."""
        return max(0, len(self._round) - self._at)

    def _look(self, namespace: Mapping[Any, Any], hidden: Mapping[str, Any], names: Iterable[str], look: Look) -> None:
        main = namespace.get("__name__")
        done: set[str] = set()
        for name in [*names, *self._newest(namespace)]:
            if type(name) is str and name not in done:
                done.add(name)
                self._examine(name, namespace, hidden, main, look)
        if self._at >= len(self._round):
            self._round, self._at, self._seen, self._odd = list(namespace), 0, set(), 0
        keys, prints, seen = self._round, self.prints, self._seen
        stop = len(keys) if self.rounds == 0 else min(len(keys), self._at + LOOK_NAMES)
        while self._at < stop:
            key = keys[self._at]
            if type(key) is not str:
                self._odd += 1
            elif key in done:
                seen.add(key)
            else:
                seen.add(key)
                if not _unchanged(prints.get(key), namespace.get(key, _MISSING)):
                    self._examine(key, namespace, hidden, main, look)
            self._at += 1  # only once looked at: a look cut short here takes this name up again next time
        if self._at >= len(keys):
            self._end_round(namespace, hidden, main, look)

    def _newest(self, namespace: Mapping[Any, Any]) -> list[Any]:
        """The keys added since the last look, walking back from the end (at most ``LOOK_NAMES``)."""
        found: list[Any] = []
        try:
            if self._last is not _MISSING:
                for key in reversed(namespace):  # type: ignore[call-overload]
                    if key is self._last or len(found) >= LOOK_NAMES:
                        break
                    found.append(key)
            self._last = next(reversed(namespace), _MISSING)  # type: ignore[call-overload]
        except (RuntimeError, TypeError):  # changed size meanwhile, or a mapping that cannot walk back
            pass
        return found

    def _end_round(self, namespace: Mapping[Any, Any], hidden: Mapping[str, Any], main: Any, look: Look) -> None:
        """Every name was looked at: a name remembered that the round did not meet may be gone."""
        for name in [n for n in self.prints if n not in self._seen]:
            self._examine(name, namespace, hidden, main, look)
        self.odd_keys, self.rounds, look.round_ended = self._odd, self.rounds + 1, True

    def _examine(
        self, name: str, namespace: Mapping[Any, Any], hidden: Mapping[str, Any], main: Any, look: Look
    ) -> None:
        try:
            value = namespace.get(name, _MISSING)
        except Exception:
            return
        old = self.prints.get(name)
        if value is _MISSING:
            if old is not None:
                look.changes.append(Change(name, "deleted"))
                del self.prints[name]
            self.skipped.pop(name, None)
            return
        kind = type(value)
        if _unchanged(old, value):
            return
        self._current = (name, value, old)
        try:
            self._compare(name, value, kind, old, hidden, main, look)
        except Exception as exc:
            self._skip(f"its look raised {type_name(type(exc))}", look)
        self._current = None

    def _compare(
        self, name: str, value: Any, kind: type, old: Print | None, hidden: Mapping[str, Any], main: Any, look: Look
    ) -> None:
        if old is not None and old.ident == id(value) and old.kind is kind:
            sig = signature(value, old.of)
            if sig != old.sig:
                look.changes.append(Change(name, "changed", describe(value)))
                self.prints[name] = Print(old.ident, kind, old.of, sig)
        elif is_user_value(name, value, hidden, main):
            self.skipped.pop(name, None)
            of = family(kind)
            sig = signature(value, of)
            look.changes.append(Change(name, "bound" if old is None else "rebound", describe(value)))
            self.prints[name] = Print(id(value), kind, of, sig)
        elif old is not None:  # now holds what the record leaves out (a module, an imported function)
            look.changes.append(Change(name, "deleted"))
            del self.prints[name]

    def _blame(self, look: Look) -> None:
        """Time ran out while a value was looked at: the second time for the same value, it is to blame (once may
        be a garbage collection, or a busy machine)."""
        if self._current is None:
            return
        name, value = self._current[0], self._current[1]
        if self._suspect == (name, id(value)):
            self._skip(f"looking at it ran out of time twice ({LOOK_SECONDS:g} s)", look)
        self._suspect = (name, id(value))

    def _skip(self, why: str, look: Look) -> None:
        """The value being looked at is told by its type's name, and left alone until its name holds another."""
        if self._current is None:
            return
        name, value, old = self._current
        self._current = None
        kind = type(value)
        state = "bound" if old is None else "changed" if old.ident == id(value) else "rebound"
        look.changes.append(Change(name, state, Description(type_name(kind))))
        self.prints[name] = Print(id(value), kind, "other", None)
        self.skipped[name] = id(value)
        look.skipped.append((name, why))
