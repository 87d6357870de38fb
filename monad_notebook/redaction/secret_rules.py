"""The built-in secret detectors: which text is a credential, and which merely looks like one.

Each rule is an RE2 pattern over UTF-8 bytes with keywords for a cheap prefilter, and optionally a
checker that rejects matches that cannot be secrets. The rules run in priority order: an overlap
takes the kind of the earliest rule.

The generic ``NAME=value`` / ``NAME: value`` / ``"name": "value"`` rule replaces only the value,
and only when the name reads as a secret (password, token, secret, credential, auth, or a
qualified key such as api_key; a bare ``key`` is too common). It keeps values that cannot be
secrets: under 8 characters; ``None``/``null``/``changeme``-style words; ``<...>``, ``${VAR}``,
``$VAR``, ``{var}`` templates; paths; numbers and plain words (except for passwords); and, when
unquoted, code: calls, indexing and identifiers (``password = getpass()``, ``token =
os.environ["TOKEN"]``). The price: an unquoted all-letter password (``password: sunshineday``) is kept.
Tokens, keys and secrets (not passwords) must also look issued: a prefixed counter
(``sess_00000001``) or text with little variety (``aaaa1111``) is an id. ``PASS: <test>``, as test
harnesses write a passed test, is a status and no password (``_test_status`` says how it is told apart).

Passwords also come as command arguments (``--password X``, ``--db-password=X``, ``mysql -pX``,
``sshpass -p X``, ``curl -u user:X``, ``-passin pass:X``) and in sentences (``the password is X``,
``passwd = X``). A flag's value is kept when it is a switch (``--no-password``, ``--ask-pass``,
``--password-file``), the next flag, a metavar (``PASSWORD``) or a template; ``-p 8080`` is not
glued to its flag, so it is no password. In a sentence the value must look chosen (a digit, a
symbol or jumbled case, six characters or more) and not be code: "password is required" is kept.
Private keys live in ``key_rules``, keys an issuer marks with a prefix in ``token_rules``.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from monad_notebook.redaction.detector import Checker, Find, Spans, rule
from monad_notebook.redaction.key_rules import KEY_RULES
from monad_notebook.redaction.token_rules import TOKEN_RULES

MIN_SECRET_CHARS = 8
_MAX_NAME_BYTES = 128


# --- what a secret value looks like -------------------------------------------------------------


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_NOT_SECRETS = _set(
    "none null nil true false undefined changeme change_me password passwd secret redacted example placeholder "
    "your_token your_api_key your-api-key your_password pass"
)
_TEMPLATE_STARTS = ("<", "$", "{", "%(", "%s", "[REDACTED", "***", "...", "process.env", "os.environ", "arn:")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@-]+)+/?|[A-Za-z]:\\\S*")
NUMERIC = re.compile(r"[0-9.,:+_ eE-]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z_][a-z0-9]*(?:_[a-z0-9]+)+")
_DIGIT, _UPPER, _LOWER = re.compile(r"[0-9]"), re.compile(r"[A-Z]"), re.compile(r"[a-z]")
_SYMBOL, _SPACE = re.compile(r"[^A-Za-z0-9_.:/-]"), re.compile(r"\s")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)+")  # RSA_2048, CRAM-MD5: names, not keys
_WORD_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_CODE_CHAR = re.compile(r"[()\[\]{}=;,<>]")
_COUNTER = re.compile(r"[A-Za-z]{1,16}(?:[_.:-]?[0-9]+)+")
_MIN_ENTROPY_BITS = 2.0  # per character; issued tokens carry 3.5 and more


def _placeholder_like(value: str) -> bool:
    low = value.lower()
    return (
        low in _NOT_SECRETS
        or low.startswith(_TEMPLATE_STARTS)
        or len(set(value)) == 1
        or "://" in value
        or path_like(value)
    )


def path_like(value: str) -> bool:
    """A file path, not a base64 secret that happens to start with a slash."""
    return _PATH.fullmatch(value) is not None and (value.count("/") >= 2 or "." in value or ":\\" in value)


def _low_entropy(value: str) -> bool:
    """A counter with a prefix (``sess_00000001``, ``user-42``) or text with little variety: an id, not a key."""
    if _COUNTER.fullmatch(value):
        return True
    size = len(value)  # Shannon entropy is log2(size) - sum(c * log2(c)) / size over the character counts c
    return sum(c * math.log2(c) for c in map(value.count, set(value))) / size > math.log2(size) - _MIN_ENTROPY_BITS


def _random_looking(value: str) -> bool:
    """Issued tokens and keys carry digits, symbols or jumbled case; identifiers, ids and numbers do not."""
    if NUMERIC.fullmatch(value) or (len(value) <= 24 and _CONSTANT.fullmatch(value)) or _low_entropy(value):
        return False
    if _DIGIT.search(value) or _SYMBOL.search(value):
        return True
    if len(value) < 16 or _UPPER.search(value) is None or _LOWER.search(value) is None:
        return False
    parts = _WORD_PARTS.findall(value)
    return len("".join(parts)) / len(parts) < 4  # camelCase words are long, jumbled case is not


def _plausible(value: str, kind: str, *, quoted: bool, after: bytes) -> bool:
    """Whether an assigned value can be a secret rather than code, prose, a number or a template."""
    value = value.strip()
    if len(value) < MIN_SECRET_CHARS or _placeholder_like(value):
        return False
    if kind != "password" and not _random_looking(value):
        return False
    if quoted:
        return after[:1] not in (b"+", b"%") and not (
            _SPACE.search(value) and (kind != "password" or _CODE_CHAR.search(value))
        )
    return after not in (b"(", b"[") and _IDENTIFIER.fullmatch(value) is None


# --- the generic NAME=value rule ------------------------------------------------------------------

_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PASSWORD_WORDS = _set("password passwd passphrase pass pwd passcode")
_SECRET_WORDS = _set("secret secrets credential credentials creds auth")
_KEY_WORDS = ("apikey", "secretkey", "accesskey", "privatekey")
_KEY_QUALIFIERS = _set(
    "api access secret private auth client signing encryption master account app service subscription shared "
    "storage consumer webhook deploy license session"
)
_NOT_SECRET_NAME_WORDS = _set(
    "type count len length size url uri endpoint path file dir name id ids mode method prompt field limit max min "
    "num enabled required expires expiry expiration ttl policy format version kind provider scope scopes host port "
    "user username env var hash algorithm algo label hint reset header location spec arn"
)


@lru_cache(maxsize=4096)
def _name_kind(name: bytes) -> str | None:
    """The placeholder kind for a variable or key name that reads as a secret, else None."""
    if len(name) > _MAX_NAME_BYTES:
        return None
    ordered = [w.lower() for w in _NAME_WORDS.findall(name.decode("utf-8", "replace"))]
    words = set(ordered)
    if not words or words & _NOT_SECRET_NAME_WORDS:
        return None
    if ordered[-1] in _PASSWORD_WORDS or any(w.endswith(("password", "passwd", "passphrase")) for w in words):
        return "password"
    if any(w.endswith("token") for w in words):
        return "token"
    if any(w.endswith(_KEY_WORDS) for w in words) or ("key" in words and words & _KEY_QUALIFIERS):
        return "api-key"
    if words & _SECRET_WORDS or any(w.endswith("secret") for w in words):
        return "secret"
    return None


_VALUE_GROUPS, _BARE_GROUP = (2, 3, 4), 4
_NEXT_PARAM = re.compile(rb"&[A-Za-z_][\w.-]*=")
_BARE = r"[^\s\"'`,;(){}\[\]<>=][^\s\"'`,;(){}\[\]<>]{7,}"
_ASSIGNMENT = (
    rf"(?i)([a-z0-9_.-]*(?:pass|pwd|secret|token|auth|cred|(?:{'|'.join(sorted(_KEY_QUALIFIERS))})[_.-]?key)"
    r"[a-z0-9_.-]*)[\"']?[ \t]*(?::[ \t]*[a-z_][a-z0-9_.|\[\], ]*=|:=|=>|=|:)[ \t]*"
    rf"(?:\"([^\"\r\n]{{8,}})\"|'([^'\r\n]{{8,}})'|({_BARE}))"
)


def _check_assignment(data: bytes, spans: Spans) -> list[Find]:
    """The value of a NAME=value match when the name reads as a secret and the value could be one.

    An unquoted value that runs on into ``&name=value`` query parameters is split there, each
    parameter judged by its own name, in one pass over the value.
    """
    group = next(g for g in _VALUE_GROUPS if spans[g][0] >= 0)
    start, end = spans[group]
    if group != _BARE_GROUP:
        pieces = [(*spans[1], start, end, data[end + 1 : end + 4].lstrip())]
    else:
        pieces, name = [], spans[1]
        for param in _NEXT_PARAM.finditer(data, start, end):
            pieces.append((*name, start, param.start(), b"&"))
            name, start = (param.start() + 1, param.end() - 1), param.end()
        pieces.append((*name, start, end, data[end : end + 1]))
    finds = []
    for name_start, name_end, start, end, after in pieces:
        kind = _name_kind(data[name_start:name_end]) if data[name_start - 1 : name_start] != b":" else None
        value = data[start:end].decode("utf-8", "replace")
        if (
            kind
            and _plausible(value, kind, quoted=group != _BARE_GROUP, after=after)
            and not _test_status(data, (name_start, name_end), (start, end), quoted=group != _BARE_GROUP)
        ):
            finds.append((kind, start, end))
    return finds


_STATUS = b"PASS"
_STATUS_SEPARATOR = re.compile(rb":[ \t]*[\"']?")
_STATUS_LEAD = re.compile(rb"[ \t]*(?:---[ \t]+)?")
_STATUS_LINE = re.compile(
    rb"[ \t]*(?:---[ \t]+)?(?:X?PASS|X?FAIL|K(?:PASS|FAIL)|SKIP|UNSUPPORTED|UNRESOLVED|UNTESTED):|=== RUN"
)
_TEST_NAME = re.compile(r"[a-z0-9]+(?:[-_./+][a-z0-9]+)+:?")
_LEAD_BYTES, _LINE_BYTES = 64, 4096  # how far a line's start and its neighbours are looked for: scans stay linear


def _test_status(data: bytes, name: tuple[int, int], value: tuple[int, int], *, quoted: bool) -> bool:
    """``PASS: <test>`` as test harnesses write a passed test (DejaGnu, automake, Go): a status, not a password.

    It is the bare capital word and a colon, then a test's name: a path or a hyphenated name in
    lower case anywhere (``tests/misc/sort.sh``, ``gdb.base/break.exp:``, ``test-strtod``); or,
    when ``PASS`` opens its line, any name the line goes on after (a description, a duration, a
    TAP number; not a ``#`` comment), or any line next to another test's status (``FAIL:``,
    ``XFAIL:``, ``--- PASS:``, ``=== RUN``...). A password named ``PASS`` is assigned (``PASS=``),
    or stands alone: ``PASS: Kq9$mWx2Lp`` after ``USER: ada``.
    """
    (name_start, name_end), (start, end) = name, value
    if data[name_start:name_end] != _STATUS or not _STATUS_SEPARATOR.fullmatch(data, name_end, start):
        return False
    if not quoted and _TEST_NAME.fullmatch(data[start:end].decode("utf-8", "replace")):
        return True
    line_start = data.rfind(b"\n", max(0, name_start - _LEAD_BYTES), name_start) + 1
    if (line_start == 0 and name_start > _LEAD_BYTES) or not _STATUS_LEAD.fullmatch(data, line_start, name_start):
        return False
    line_end = data.find(b"\n", end, end + _LINE_BYTES)
    rest = data[end + quoted : line_end if line_end >= 0 else end + _LINE_BYTES].strip()
    return bool(rest and not rest.startswith(b"#")) or _beside_a_status(data, line_start, line_end)


def _beside_a_status(data: bytes, line_start: int, line_end: int) -> bool:
    """Whether the line before (if it starts within ``_LINE_BYTES``) or after this one is a test's status."""
    if line_start > 0:
        low = max(0, line_start - 1 - _LINE_BYTES)
        previous = data.rfind(b"\n", low, line_start - 1) + 1
        if (previous > 0 or low == 0) and _STATUS_LINE.match(data, previous):
            return True
    return line_end >= 0 and _STATUS_LINE.match(data, line_end + 1) is not None


def _value_check(kind: str, min_chars: int = MIN_SECRET_CHARS) -> Checker:
    """For rules whose position already implies a secret: skip templates and tiny values."""

    def check(data: bytes, spans: Spans) -> list[Find]:
        start, end = spans[1]
        value = data[start:end].decode("utf-8", "replace")
        return [(kind, start, end)] if len(value) >= min_chars and not _placeholder_like(value) else []

    return check


def _check_authorization(data: bytes, spans: Spans) -> list[Find]:
    """After an explicit scheme any credential counts; without one, skip code like ``authorization = get()``."""
    start, end = spans[2]
    value = data[start:end].decode("utf-8", "replace")
    if spans[1][0] >= 0:
        ok = len(value) >= MIN_SECRET_CHARS and not _placeholder_like(value)
    else:
        ok = _plausible(value, "bearer", quoted=False, after=data[end : end + 1])
    return [("bearer", start, end)] if ok else []


def _has_digit(kind: str, group: int = 0) -> Checker:
    """For prefix rules that also catch words (``sk-learn-...``): issued keys carry digits."""

    def check(data: bytes, spans: Spans) -> list[Find]:
        start, end = spans[group]
        return [(kind, start, end)] if _DIGIT.search(data[start:end].decode("ascii", "replace")) else []

    return check


# --- passwords on a command line and in sentences --------------------------------------------------

_FLAG_WORDS = "password|passwd|passphrase|pass|pwd|passin|passout|storepass|keypass|srcstorepass|deststorepass"
_FLAG_NOT_VALUE = _set("no ask prompt reset forgot require required show hide check use empty skip allow stdin file")
_METAVAR = re.compile(r"[A-Z][A-Z_-]*")
_OPENSSL_SOURCES = ("env:", "file:", "fd:", "stdin")
_PROSE_MIN_CHARS = 6
_TRAILING_PUNCTUATION = b".,;:)"
_CODE_VALUE = re.compile(r".*[()\[\]{}<>$].*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z_][a-z0-9]*(?:_[a-z0-9]+)+")
_VALUE = r"""(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"'`]+))"""
_LOOSE_CASE = re.compile(r"[A-Za-z][a-z]*|[A-Z]+")


def _quoted_or_bare(spans: Spans, first: int) -> tuple[int, int, bool] | None:
    """The (start, end, quoted) of whichever of the three value groups from ``first`` matched."""
    for group in (first, first + 1, first + 2):
        if spans[group][0] >= 0:
            return (*spans[group], group != first + 2)
    return None


def _check_flag(data: bytes, spans: Spans) -> list[Find]:
    """``--password X``, ``--db-password=X``, ``-passin pass:X``: skip switches, templates, paths and metavars."""
    flag = data[spans[1][0] : spans[1][1]].decode("utf-8", "replace").lower()
    start, end, quoted = _quoted_or_bare(spans, 2) or (0, 0, False)
    value = data[start:end].decode("utf-8", "replace")
    if set(re.split(r"[-_]", flag)) & _FLAG_NOT_VALUE or value.startswith(_OPENSSL_SOURCES):
        return []
    if value.startswith("pass:"):
        start, value = start + 5, value[5:]
    spaced = data[spans[1][1] : spans[1][1] + 1] != b"="
    if not quoted and (
        value.startswith("-") or _METAVAR.fullmatch(value) or (spaced and value.isalpha() and value.islower())
    ):
        return []
    return [("password", start, end)] if len(value) >= 3 and not _placeholder_like(value) else []


def _check_option_value(data: bytes, spans: Spans) -> list[Find]:
    """``mysql -pX``, ``sshpass -p X``, ``curl -u user:X``: the command already says it is a password."""
    start, end, _ = _quoted_or_bare(spans, 1) or (0, 0, False)
    value = data[start:end].decode("utf-8", "replace")
    return [("password", start, end)] if len(value) >= 3 and not _placeholder_like(value) else []


def _check_prose(data: bytes, spans: Spans) -> list[Find]:
    """``the password is X`` / ``password: X``: a value that looks chosen, not a word or code (``is required``)."""
    start, end, quoted = _quoted_or_bare(spans, 1) or (0, 0, False)
    if not quoted:
        while end > start and data[end - 1] in _TRAILING_PUNCTUATION:
            end -= 1
    value = data[start:end].decode("utf-8", "replace")
    if (
        len(value) < _PROSE_MIN_CHARS
        or _placeholder_like(value)
        or data[end + quoted : end + quoted + 2].strip()[:1] in (b"+", b"%")
    ):
        return []
    if not quoted and (_CODE_VALUE.fullmatch(value) or not _chosen(value)):
        return []
    return [("password", start, end)]


def _chosen(value: str) -> bool:
    """Digits, symbols or jumbled case: a password someone picked, not a word of the sentence."""
    return bool(_DIGIT.search(value) or not value.isalnum() or _LOOSE_CASE.fullmatch(value) is None)


# --- the detectors, in priority order (an overlap takes the kind of the earliest rule) -----------------

_NAME_SEP = r"[\"']?[ \t]*[:=][ \t]*[\"']?"


RULES = [
    *KEY_RULES,
    *TOKEN_RULES,
    rule(
        "aws-secret-key",
        rf"(?i)secret_?access_?key{_NAME_SEP}([A-Za-z0-9/+]{{40}})(?:[^A-Za-z0-9/+]|$)",
        "access",
        1,
    ),
    rule("azure-key", r"(?i)(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})", "accountkey accesskey", 1),
    rule("azure-sas", r"[?&]sig=([A-Za-z0-9%+/]{20,}(?:%3D|=)*)", "sig=", 1),
    rule("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]+)", "slack", 1),
    rule("twilio", rf"(?i)twilio[a-z0-9_]*(?:auth_?token|secret){_NAME_SEP}([0-9a-f]{{32}})\b", "twilio", 1),
    rule(
        "url-password",
        r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@\"'<>]*:([^\s/@\"'<>]+)@",
        "://",
        1,
        _value_check("url-password", 3),
    ),
    rule(
        "bearer",
        rf"(?i)\bauthorization{_NAME_SEP}(?:(bearer|basic|token|digest)[ \t]+)?([A-Za-z0-9._~+/-]+=*)",
        "authorization",
        2,
        _check_authorization,
    ),
    rule("bearer", r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)", "bearer", 1, _has_digit("bearer", 1)),
    rule(
        "password",
        rf"(?i)(?:^|[\s\"'=(\[,])--?((?:[a-z0-9]+[-_])*(?:{_FLAG_WORDS}))(?:[ \t]+|=){_VALUE}",
        "pass pwd",
        0,
        _check_flag,
    ),
    rule(
        "password",
        rf"(?:\b(?:mysql[a-z]*|mariadb[a-z-]*)\b[^\n;|&]*?[ \t\"']-p"
        rf"|\b(?:sshpass|docker[ \t]+login\b[^\n;|&]*?)[ \t]+-p[ \t]*"
        rf"|\bcurl\b[^\n;|&]*?[ \t](?:-u[ \t]*|--user(?:[ \t]+|=))[\"']?[^\s:\"']*:){_VALUE}",
        "mysql mariadb sshpass docker curl",
        0,
        _check_option_value,
    ),
    rule(
        "password",
        r"(?i)\bpass(?:word|wd|phrase|code)s?(?:[ \t]+(?:is|was)[ \t]*:?|[ \t]*:|[ \t]+=)[ \t]+" + _VALUE,
        "pass",
        0,
        _check_prose,
    ),
    rule("secret", _ASSIGNMENT, "pass pwd secret token key auth cred", 0, _check_assignment, True),
]

KINDS = frozenset({rule.kind for rule in RULES} | {"password", "token", "api-key", "secret"})
