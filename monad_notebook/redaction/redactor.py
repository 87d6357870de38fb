"""The AfterTool redaction chokepoint: secrets never reach the spill, the store, events or the model.

It runs once per tool result, on the full pre-truncation text, so a secret in the omitted middle
of a large output is still found. Matching uses RE2 on the UTF-8 bytes (linear time: a 10 MB line
or a megabyte of whitespace cannot stall a turn), with a keyword prefilter so most rules never
scan most text. Each secret becomes a typed placeholder ``[REDACTED:kind]``: a bare ``***`` makes
models "fix" files, and the kind tells the model what was there. Overlapping finds merge into one
placeholder and existing placeholders are never matched again, so redacting twice changes nothing;
only a placeholder whose kind a rule writes counts as one, so ``[REDACTED:<a real token>]`` is not
a hiding place.

The detectors themselves live in ``token_rules``, ``secret_rules`` and ``key_rules``; this module runs them, plus
the user's patterns, the values of secret-looking environment variables and the user's hook.
"""

from __future__ import annotations

import importlib
import os
import re
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

from monad_notebook.errors import ConfigError
from monad_notebook.redaction.detector import Find, Rule, Spans, compile_pattern, scan
from monad_notebook.redaction.secret_rules import KINDS, MIN_SECRET_CHARS, NUMERIC, RULES, path_like

_MAX_PASSES = 4
_BUILTIN_KINDS = frozenset(kind.encode() for kind in KINDS) | {b"hook-error"}
_PLACEHOLDER = re.compile(rb"\[REDACTED:([^\[\]\s]{1,200})\]")
_JOINT = "\n\x00\n"
_KEYWORDS = frozenset(k for rule in RULES for k in rule.keywords)  # only built-in rules have prefilter keywords


@dataclass(frozen=True)
class Redaction:
    """The text to use downstream, and what was taken out of it (kind -> how many)."""

    text: str
    counts: dict[str, int]

    @property
    def redacted(self) -> bool:
        return bool(self.counts)


# --- environment secrets ----------------------------------------------------------------------------

_ENV_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|APIKEY|ACCESSKEY"
    r"|(?:^|_)(?:KEY|KEYS|PASS|PWD|AUTH|PRIVATE|PAT)(?:_|$)",
    re.IGNORECASE,
)
_ENV_NOT_SECRET = frozenset({"true", "false", "none", "null", "yes", "no", "on", "off"})


@lru_cache(maxsize=1024)
def _secret_env_name(name: str) -> bool:
    return _ENV_NAME.search(name) is not None


def _env_secrets(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(name, value) of variables whose name reads as a secret and whose value could be one.

    Runs on every redaction (the kernel's environment can change between cells), so only the
    values of secret-looking names are read.
    """
    found = []
    for name in [name for name in env if _secret_env_name(name)]:
        value = env[name].strip()
        if len(value) < MIN_SECRET_CHARS or value.lower() in _ENV_NOT_SECRET:
            continue
        if not (NUMERIC.fullmatch(value) or path_like(value)):
            found.append((name, value))
    return tuple(sorted(found))


_last_environment: tuple[dict[Any, Any], tuple[tuple[str, str], ...]] = ({}, ())


def _process_env_secrets() -> tuple[tuple[str, str], ...]:
    """``_env_secrets(os.environ)``, read again only when the environment changed.

    Reading it costs more than redacting a short line; comparing the process's raw environment
    with the copy taken at the last reading is done in C, in about a microsecond.
    """
    global _last_environment
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return _env_secrets(os.environ)
    seen, secrets = _last_environment
    if raw == seen:
        return secrets
    snapshot = dict(raw)  # taken first: a change made while reading is read again next time
    _last_environment = (snapshot, _env_secrets(os.environ))
    return _last_environment[1]


@lru_cache(maxsize=8)
def _env_rule(secrets: tuple[tuple[str, str], ...]) -> Rule:
    """One compiled alternation per environment snapshot, so the scan stays a single linear pass."""
    by_value: dict[bytes, str] = {}
    for name, value in secrets:
        by_value.setdefault(value.encode("utf-8", "surrogatepass"), name)
    regex = compile_pattern(b"|".join(re2.escape(v) for v in sorted(by_value, key=len, reverse=True)))

    def check(data: bytes, spans: Spans) -> list[Find]:
        start, end = spans[0]
        return [(f"env:{by_value[data[start:end]]}", start, end)]

    return Rule("env", regex, (), 0, check)


# --- the redactor --------------------------------------------------------------------------------------


def _user_rule(name: str, regex: str) -> Rule:
    kind = re.sub(r"[^A-Za-z0-9_.:-]+", "-", name).strip("-") or "pattern"
    try:
        compiled = compile_pattern(regex)
    except re2.error as error:
        raise ConfigError(
            f"context.redaction pattern {name!r} is not valid RE2 syntax ({error}); "
            "remove lookarounds and backreferences from it in agents.json"
        ) from None
    return Rule(kind, compiled, (), 1 if compiled.groups else 0)


def _load_hook(spec: str) -> Callable[[str], str]:
    module_name, _, attr = spec.partition(":")
    try:
        hook = getattr(importlib.import_module(module_name), attr) if attr else None
    except Exception as error:
        raise ConfigError(
            f"context.redaction.hook {spec!r} cannot be imported ({type(error).__name__}: {error}); "
            "fix the 'module:function' path or remove the hook from agents.json"
        ) from None
    if not callable(hook):
        raise ConfigError(f"context.redaction.hook {spec!r} is not a 'module:function' callable; fix it in agents.json")
    return hook


class Redactor:
    """Finds secrets in tool output and replaces them with ``[REDACTED:kind]``; see the module docstring.

    ``patterns`` are extra (name, RE2 regex) detectors: the first capture group is replaced if
    there is one, else the whole match. ``env=None`` reads ``os.environ`` at each call.
    """

    def __init__(
        self,
        *,
        patterns: Sequence[tuple[str, str]] = (),
        hook: Callable[[str], str] | None = None,
        env: Mapping[str, str] | None = None,
        env_secrets: bool = True,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.env_secrets = env_secrets
        self.hook = hook
        self._env = env
        self._rules = [_user_rule(name, regex) for name, regex in patterns] + RULES
        self._kinds = frozenset(rule.kind.encode() for rule in self._rules) | _BUILTIN_KINDS

    @classmethod
    def from_config(cls, redaction_cfg: Any) -> Redactor:
        """Build from ``context.redaction``: enabled, env_secrets, patterns (.name, .regex), hook 'module:function'."""
        if redaction_cfg is None:
            return cls()
        hook_spec = getattr(redaction_cfg, "hook", None)
        return cls(
            patterns=[(p.name, p.regex) for p in getattr(redaction_cfg, "patterns", None) or ()],
            hook=_load_hook(hook_spec) if hook_spec else None,
            env_secrets=getattr(redaction_cfg, "env_secrets", True),
            enabled=getattr(redaction_cfg, "enabled", True),
        )

    def redact(self, text: str) -> Redaction:
        """Replace every secret in ``text``, then run the user hook; a failing hook withholds the whole text."""
        if not self.enabled:
            return Redaction(text, {})
        text, counts = self._replace(text)
        if self.hook is None:
            return Redaction(text, counts)
        try:
            hooked = self.hook(text)
            if not isinstance(hooked, str):
                raise TypeError(f"it returned {type(hooked).__name__}, not str")
        except Exception as error:
            why, _ = self._replace(f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}")
            return Redaction(f"[REDACTED:hook-error] the redaction hook failed: {why}", {**counts, "hook-error": 1})
        if hooked != text:
            counts = {**counts, "hook": counts.get("hook", 0) + 1}
        return Redaction(hooked, counts)

    def redact_each(self, texts: Sequence[str]) -> list[str]:
        """Each text redacted as if alone, in one pass over them joined: an event's fields, a record's names.

        The joint is a line holding only a NUL, which no rule reads as part of a secret; should a
        redaction still reach across one (a user hook rewrote it), each text is redacted alone.
        """
        if len(texts) < 2:
            return [self.redact(text).text for text in texts]
        parts = self.redact(_JOINT.join(texts)).text.split(_JOINT)
        return parts if len(parts) == len(texts) else [self.redact(text).text for text in texts]

    def placeholders(self, text: str) -> list[str]:
        """The genuine placeholders in ``text`` (of kinds this redactor writes), in order, each as often as it occurs.

        A placeholder copied back into something that is written (a cell's source) would replace
        the secret it stands for; callers refuse such text.
        """
        if not self.enabled or "[REDACTED:" not in text:
            return []
        data = text.encode("utf-8", "surrogatepass")
        _, kinds = self._active_rules()
        return [data[a:b].decode() for a, b in _placeholders(data, kinds)]

    def find(self, text: str) -> list[str]:
        """The kinds of secret in ``text``, sorted: a verdict for callers that must not store secrets at all."""
        return sorted(self.redact(text).counts)

    def cut_point(self, text: str, at: int, *, forward: bool = False) -> int:
        """``at``, moved out of any secret that spans it: to the secret's start, or with ``forward`` its end.

        For callers that must cut text before it is redacted (a bounded capture of a flood): each
        side of the cut then holds a secret whole or not at all, so the later redaction finds it.
        One pass of the built-in, user and environment rules (the hook cannot say where it looks).
        """
        if not self.enabled or not 0 < at < len(text):
            return at
        data = text.encode("utf-8", "surrogatepass")
        target = len(text[:at].encode("utf-8", "surrogatepass"))
        rules, kinds = self._active_rules()
        for start, end, _ in _merge(_find(rules, kinds, data, 0, len(data))):
            if start < target < end:
                cut = end if forward else start
                while 0 < cut < len(data) and data[cut] & 0xC0 == 0x80:
                    cut += 1 if forward else -1
                return len(data[:cut].decode("utf-8", "surrogatepass"))
        return at

    def _active_rules(self) -> tuple[list[Rule], frozenset[bytes]]:
        """The rules to run, and the placeholder labels they write (an existing one of these is left alone)."""
        if not self.env_secrets:
            secrets: tuple[tuple[str, str], ...] = ()
        else:
            secrets = _process_env_secrets() if self._env is None else _env_secrets(self._env)
        if not secrets:
            return self._rules, self._kinds
        return [_env_rule(secrets), *self._rules], self._kinds | {f"env:{name}".encode() for name, _ in secrets}

    def _replace(self, text: str) -> tuple[str, dict[str, int]]:
        """Redact until nothing new is found: a placeholder can create a word boundary a rule needs.

        Later passes rescan only the lines that received a placeholder (the built-in rules never
        span lines through one), so they cost little.
        """
        data = text.encode("utf-8", "surrogatepass")
        (rules, kinds), counts, windows = self._active_rules(), {}, [(0, len(data))]
        for _ in range(_MAX_PASSES):
            spans = _merge([hit for a, b in windows for hit in _find(rules, kinds, data, a, b)])
            if not spans:
                break
            pieces, placed, shift = [], [], 0
            last = 0
            for start, end, kind in spans:
                placeholder = b"[REDACTED:" + kind.encode() + b"]"
                pieces += [data[last:start], placeholder]
                placed.append((start + shift, start + shift + len(placeholder)))
                shift += len(placeholder) - (end - start)
                counts[kind] = counts.get(kind, 0) + 1
                last = end
            pieces.append(data[last:])
            data = b"".join(pieces)
            windows = _lines_around(data, placed)
        return (data.decode("utf-8", "surrogatepass") if counts else text), counts


@lru_cache(maxsize=1)
def builtin_redactor() -> Redactor:
    """The built-in rules and the environment's secrets: for text shown where no configuration is in force yet (a
    configuration error, the command line), and for memory, which refuses secrets even with redaction off."""
    return Redactor()


def _find(rules: list[Rule], kinds: frozenset[bytes], data: bytes, a: int, b: int) -> list[tuple[int, int, int, str]]:
    """Every accepted find in ``data[a:b]`` as (start, end, priority, kind), skipping existing placeholders.

    Only a placeholder with a label the rules write is skipped: ``[REDACTED:<a real token>]`` is
    text shaped like one, and the token inside it is still found.
    """
    window = data if (a, b) == (0, len(data)) else data[a:b]
    lowered = window.lower()
    kept = _placeholders(window, kinds) if b"[redacted:" in lowered else []
    kept_starts = [start for start, _ in kept]
    present = _present(lowered, _KEYWORDS)
    found = []
    for priority, rule in enumerate(rules):
        if rule.keywords and present.isdisjoint(rule.keywords):
            continue
        for kind, start, end in scan(rule, window):
            if end > start and not _overlaps(kept, kept_starts, start, end):
                found.append((a + start, a + end, priority, kind))
    return found


@lru_cache(maxsize=512)
def _alternation(keywords: frozenset[bytes]) -> Any:
    return re2.compile(b"|".join(re2.escape(k) for k in sorted(keywords, key=len, reverse=True)))


def _present(lowered: bytes, keywords: frozenset[bytes]) -> frozenset[bytes]:
    """The keywords that occur in ``lowered``, in one RE2 pass rather than one search per keyword.

    Each search resumes where the last keyword was found, without it, so overlapping keywords
    (``sk`` in ``sk-ant-``) are all seen.
    """
    remaining, found, pos = keywords, set(), 0
    while remaining:
        match = _alternation(remaining).search(lowered, pos)
        if match is None:
            break
        found.add(match.group())
        remaining, pos = remaining - {match.group()}, match.start()
    return frozenset(found)


def _placeholders(window: bytes, kinds: frozenset[bytes]) -> list[tuple[int, int]]:
    return [m.span() for m in _PLACEHOLDER.finditer(window) if m.group(1) in kinds]


def _lines_around(data: bytes, placed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The disjoint line ranges that hold the given (sorted) spans; each line is searched for once."""
    windows: list[tuple[int, int]] = []
    for start, end in placed:
        if windows and start < windows[-1][1]:
            continue
        line_end = data.find(b"\n", end)
        windows.append((data.rfind(b"\n", 0, start) + 1, len(data) if line_end < 0 else line_end))
    return windows


def _overlaps(kept: list[tuple[int, int]], starts: list[int], start: int, end: int) -> bool:
    """Whether [start, end) touches an existing placeholder (``kept`` is sorted and disjoint)."""
    i = bisect_left(starts, end)
    return i > 0 and kept[i - 1][1] > start


def _merge(found: list[tuple[int, int, int, str]]) -> list[tuple[int, int, str]]:
    """Union overlapping finds; the merged span takes the kind of its highest-priority rule."""
    merged: list[list[Any]] = []
    for start, end, priority, kind in sorted(found):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if priority < last[2]:
                last[2], last[3] = priority, kind
        else:
            merged.append([start, end, priority, kind])
    return [(start, end, kind) for start, end, _, kind in merged]
