"""Issued tokens: keys an issuer marks with a prefix (``ghp_``, ``AKIA``, ``sk-proj-``), found wherever they start.

People put keys where names go: a backup file (``backup_ghp_....json``), a column
(``openai_sk-proj-...``), a variable (``creds_AKIA...``). A leading word boundary would miss
every one of them, and RE2 has no look-behind, so the patterns have none: each find looks at
the byte before it instead. At a word boundary the rule's usual checks decide. Glued after a
letter, a digit or ``_``, the prefix may be the end of a word, so the body must also look issued:

- a prefix that ends words (``sk-`` and ``sk-admin-`` in ``disk-``, ``SK`` in ``TASK``, ``npm_``
  in ``pnpm_``, ``SG.`` in ``MSG.``, ``sk_test_`` in ``task_test_``, ``hf_``) needs a random body: both cases
  jumbled (not camelCase words), a digit unless it is long (an all-letter Hugging Face token), and
  the issuer's real length (a bare ``sk-`` and 40 characters or more); a date, a pod name's hash
  (``helpdesk-admin-portal-7d9f8b6c5-x2k4p``), a url-safe digest or a hex digest is not one;
- a longer prefix that could still follow a word (``sk-ant-``, ``ghs_`` in ``highs_``) needs a
  body that is not a counter or words: a digit or mixed case, and variety;
- a prefix no word ends with (``ghp_``, ``github_pat_``, ``glpat-``, ``xoxb-``, ``whsec_``,
  ``pypi-AgE``, ``AIza``, a JWT) needs nothing more than its shape;
- an AWS key id (upper case by design) needs a digit.

A body of fixed length is also bounded on the right: ``AKIA`` and 16 characters, then anything
but a letter or digit (``_`` included, so ``AKIA..._old.csv`` is found). A rejected glued find is
searched again from the end of its prefix, so a real key behind a look-alike is still found.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from monad_notebook.redaction.detector import Find, Rule, Spans, rule

_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_DIGIT, _UPPER, _LOWER = re.compile(r"[0-9]"), re.compile(r"[A-Z]"), re.compile(r"[a-z]")
_CASE_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_MIN_BODY = 16  # letters and digits of a glued body: shorter ones are words and ids
_LETTERS_ONLY = 30  # an all-letter body this long reads as random, not as words
_MAX_CASE_PART = 4  # mean length of a body's case runs: camelCase words are longer, jumbled case shorter
_MIN_BITS = 3.0  # Shannon entropy per character of a glued body; issued tokens carry 4 and more
_NOT_ALNUM = "(?:[^0-9A-Za-z]|$)"


def _entropy(text: str) -> float:
    size = len(text)
    return math.log2(size) - sum(c * math.log2(c) for c in map(text.count, set(text))) / size if size else 0.0


def random_body(body: str) -> bool:
    """A body random as issued keys are: a long run of letters and digits, both cases jumbled, a digit unless the
    run is long, and high entropy (issued keys seldom hold a separator; ``RCNN-ResNet50-FPN-3x`` is words)."""
    run = max(_SEPARATORS.split(body), key=len)
    if len(run) < _MIN_BODY or _entropy(run) < _MIN_BITS:
        return False
    if not (_UPPER.search(run) and _LOWER.search(run)):
        return False
    if not _DIGIT.search(run) and len(run) < _LETTERS_ONLY:
        return False
    parts = _CASE_PARTS.findall(run)
    return len("".join(parts)) / len(parts) < _MAX_CASE_PART


def varied_body(body: str) -> bool:
    """A body that is not a counter or a word: a digit or mixed case, and some variety."""
    chars = _SEPARATORS.sub("", body)
    mixed = bool(_UPPER.search(chars) and _LOWER.search(chars))
    return len(chars) >= _MIN_BODY and (mixed or bool(_DIGIT.search(chars))) and _entropy(chars) >= _MIN_BITS


def aws_body(body: str) -> bool:
    """An AWS key id's 16 upper-case characters with a digit among them (a constant's words have none)."""
    return bool(_DIGIT.search(body)) and _entropy(body) >= _MIN_BITS


def letters_body(body: str) -> bool:
    """A Hugging Face token's body: letters only, random (a url-safe digest's run holds digits)."""
    return body.isalpha() and random_body(body)


def hex_body(body: str) -> bool:
    """Hex with both digits and letters: a hash glued to ``SK`` is still a Twilio key only if it looks like hex."""
    return bool(_DIGIT.search(body) and re.search(r"[a-fA-F]", body))


def has_digit(body: str) -> bool:
    return _DIGIT.search(body) is not None


def any_body(body: str) -> bool:
    """For a prefix no word ends with (``ghp_``, ``glpat-``, ``xoxb-``, ``AIza``, a JWT): its shape is enough."""
    return True


@dataclass(frozen=True)
class Token:
    """One issuer's key: ``prefix`` and ``body`` (RE2), what must follow it (``tail``, not redacted), and the body
    tests: ``glued`` for a find after a letter, digit or ``_``, ``always`` for every find.

    ``bounded`` is for a fixed-length body whose alphabet holds ``_`` and ``-``: a tail would refuse
    ``AIza..._old``, so only a glued find must end where the key does."""

    kind: str
    prefix: str
    body: str
    keywords: str
    glued: Callable[[str], bool] = random_body
    tail: str = ""
    always: Callable[[str], bool] | None = None
    bounded: bool = False  # a glued find must end where the key does: no letter or digit right after it
    glued_min: int = 0  # a glued body's least length: the issuer's real one, not the floor a boundary allows


def token_rule(token: Token) -> Rule:
    """The detector of one issuer's keys: the prefix in group 1, the body in group 2, the tail after them."""

    def check(data: bytes, spans: Spans) -> list[Find]:
        start, (body_start, end) = spans[1][0], spans[2]
        body = data[body_start:end].decode("ascii", "replace")
        if token.always is not None and not token.always(body):
            return []
        if start > 0 and data[start - 1] in _WORD_BYTES:
            short = len(body) < token.glued_min
            if short or not token.glued(body) or (token.bounded and data[end : end + 1].isalnum()):
                return []
        return [(token.kind, start, end)]

    return rule(token.kind, f"({token.prefix})({token.body}){token.tail}", token.keywords, 0, check, rescan=True)


TOKENS = [
    Token("aws-access-key", "AKIA|ASIA|ABIA|ACCA", "[0-9A-Z]{16}", "akia asia abia acca", aws_body, _NOT_ALNUM),
    Token("gcp-api-key", "AIza", "[0-9A-Za-z_-]{35}", "aiza", any_body, bounded=True),
    Token("anthropic", "sk-ant-", "[A-Za-z0-9_-]{32,}", "sk-ant-", varied_body),
    Token("openai", "sk-(?:proj|svcacct|admin)-", "[A-Za-z0-9_-]{20,}", "sk-", always=has_digit),
    Token("openai", "sk-", "[A-Za-z0-9_-]{20,}", "sk-", always=has_digit, glued_min=40),
    Token("github", "gh[pour]_", "[A-Za-z0-9]{36,}", "gh", any_body),
    Token("github", "ghs_", "[A-Za-z0-9]{36,}", "ghs_", varied_body),
    Token("github", "github_pat_", "[A-Za-z0-9_]{50,}", "github_pat_", any_body),
    Token("gitlab", "gl(?:pat|dt|ptt|rt)-", "[A-Za-z0-9_-]{20,}", "glpat- gldt- glptt- glrt-", any_body),
    Token("slack", "xox[abposre]-", "[0-9A-Za-z-]{10,}", "xox", any_body),
    Token("stripe", "(?:sk|rk)_(?:live|test)_", "[0-9A-Za-z]{20,}", "_live_ _test_", glued_min=24),
    Token("stripe", "whsec_", "[A-Za-z0-9+/=]{20,}", "whsec_", any_body),
    Token("huggingface", "hf_", "[A-Za-z0-9]{30,}", "hf_", letters_body, glued_min=34),
    Token("npm", "npm_", "[A-Za-z0-9]{36}", "npm_", tail=_NOT_ALNUM),
    Token("pypi", "pypi-AgE", "[A-Za-z0-9_-]{50,}", "pypi-age", any_body),
    Token("twilio", "SK", "[0-9a-fA-F]{32}", "sk", hex_body, _NOT_ALNUM),
    Token("sendgrid", r"SG\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "sg.", tail=_NOT_ALNUM),
    Token("jwt", "eyJ", r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", "eyj", any_body),
]
TOKEN_RULES: list[Rule] = [token_rule(token) for token in TOKENS]
