"""Does a fact hold a credential? Memory's own reading, stricter than tool-output redaction.

The redactor finds secrets by their shape (``ghp_...``, ``NAME=value``). A fact is prose, so it
can also hold a credential in plain words ("the postgres password is X", "db login: analyst /
X"), or disguised: full-width or look-alike letters, characters spaced apart, base64 or hex.
Each disguise is undone (``folding``) and the redactor runs again on the result; the plain-word
forms have their own patterns. A long random-looking string is refused too: a fact has no use
for one, and a key that matches no known shape is still a key.
"""

from __future__ import annotations

import re

from monad_notebook.memory.folding import ENCODED, decoded_blobs, joined_runs, unmask
from monad_notebook.redaction.redactor import Redactor

MIN_PASSWORD_CHARS = 6
MIN_TOKEN_CHARS = 12
MIN_BLOB_CHARS = 32

_CRED = (
    r"(?:pass(?:word|wd|phrase|code)s?|pass ?word|pwd|pw|secret(?: key)?|(?:api|access|secret|private|signing"
    r"|deploy|auth) ?(?:key|token)|(?:api[ _-]?)?token|pat|client secret|pin|pass)"
)
_LINK = r"(?:\s*(?:is|are|was|were|reads|equals|is set to|has been set to|is now|would be|will be)\b)?\s*[:=]?"
_PLACE = r"(?:\s+(?:for|of|on|to|at|in|of the|for the|on the)\s+[\w.@/-]+(?:\s+[\w.@/-]+){0,2}?)?"
_VALUE = r"\s*[\"'`]?(?P<value>[^\s\"'`]+)(?P<quote>[\"'`])?"
_PLAIN_SECRET = re.compile(rf"\b(?P<cred>{_CRED})\b{_PLACE}{_LINK}{_VALUE}", re.IGNORECASE)
_LOGIN = re.compile(
    r"\b(?:log ?in|logon|sign[ -]?in|credentials?|creds|account|user ?/ ?pass(?:word)?)\b\s*(?:is|are|:|=)?\s*"
    r"(?:as\s+)?(?P<user>[\w.@+-]{2,64})\s*(?:[/:,|]|\s+and\s+)\s*[\"'`]?(?P<value>[^\s\"'`]+)",
    re.IGNORECASE,
)
_NEEDS_LINK = re.compile(r"pass|pin", re.IGNORECASE)
_NOT_VALUES = frozenset(
    re.findall(
        r"\w+",
        "is are was were in at on for the a an of to by from with via under stored kept managed read set rotated "
        "required reset expired valid hashed encrypted same policy hash length limit field column file format",
    )
)
_TEMPLATE = re.compile(r"^(?:<.*>|\$\{?\w+\}?|\{\w+\}|\*+|x+|\[REDACTED:.*|your_\w+|changeme)$", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_HEX = re.compile(r"[0-9a-fA-F-]+")
_WORD_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_TRAILING = ".,;)"


def secret_kinds(text: str, redactor: Redactor) -> list[str]:
    """The kinds of credential in ``text`` (empty when there is none), each saying how it was hidden."""
    kinds = redactor.find(text)
    if kinds:
        return kinds
    plain = unmask(text)
    found = [f"{kind}, disguised" for kind in redactor.find(plain)]
    found += [f"{kind}, spaced out" for kind in redactor.find("\n".join(joined_runs(plain)))]
    found += plain_word_secrets(plain)
    for decoded in decoded_blobs(plain):
        found += [f"{kind}, encoded" for kind in [*redactor.find(decoded), *plain_word_secrets(decoded)]]
    if not found and any(_random_blob(token) for token in ENCODED.findall(plain)):
        found.append("random-looking key")
    return sorted(set(found))


def plain_word_secrets(text: str) -> list[str]:
    """Credentials written as prose: "the password is X", "token: X", "login: user / X"."""
    found = []
    for match in _PLAIN_SECRET.finditer(text):
        cred, value = match.group("cred").lower(), match.group("value").rstrip(_TRAILING)
        linked = text[match.end("cred") : match.start("value")]
        if _NEEDS_LINK.fullmatch(cred) and not re.search(r"[:=]|\bis\b", linked):
            continue
        kind = "token" if "token" in cred or "key" in cred or cred == "pat" else "password"
        if _secret_value(value, kind, quoted=match.group("quote") is not None):
            found.append(f"{kind} in plain words")
    for match in _LOGIN.finditer(text):
        if _secret_value(match.group("value").rstrip(_TRAILING), "password", quoted=False):
            found.append("login in plain words")
    return found


def _secret_value(value: str, kind: str, *, quoted: bool) -> bool:
    """Whether a word after "password is" can be the password itself, not prose, a name or a template."""
    if value.lower() in _NOT_VALUES or _TEMPLATE.match(value) or _ENV_NAME.match(value) or "://" in value:
        return False
    if value.count("/") >= 2 or value.startswith(("/", "~", "./")):
        return False
    if kind == "token":
        return len(value) >= MIN_TOKEN_CHARS and bool(re.search(r"\d", value)) and bool(re.search(r"[A-Za-z]", value))
    if len(value) < MIN_PASSWORD_CHARS:
        return quoted and len(value) >= 4
    symbols = re.search(r"[^A-Za-z0-9\-]", value) is not None or value.count("-") >= 2
    mixed = re.search(r"[a-z]", value) is not None and re.search(r"[A-Z]", value[1:]) is not None
    return quoted or symbols or mixed or re.search(r"\d", value) is not None


def _random_blob(token: str) -> bool:
    """Long, with digits and both cases, not hex (hashes, UUIDs), and in short jumbled-case pieces."""
    token = token.strip("=-_")
    if len(token) < MIN_BLOB_CHARS or _HEX.fullmatch(token):
        return False
    if not (re.search(r"\d", token) and re.search(r"[a-z]", token) and re.search(r"[A-Z]", token)):
        return False
    parts = _WORD_PARTS.findall(token)
    return bool(parts) and len("".join(parts)) / len(parts) < 3
