"""The spellings of a fact that memory's checks read: what the text looks like once disguises are undone.

A check that reads only the raw text is beaten by full-width letters, Cyrillic look-alikes,
combining marks, zero-width characters, letters spaced apart or digits for letters. Each
function here undoes one family of disguises; the checks scan every spelling and refuse the
fact if any of them matches. The spellings are only read, never stored.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

MAX_SHORT_TOKEN = 4
MIN_RUN_TOKENS = 6
MAX_RUN_STARTS = 32
MIN_ENCODED_CHARS = 16
MIN_PRINTABLE_SHARE = 0.9

_LOOKALIKES = str.maketrans(
    # Cyrillic and Greek letters that render like Latin ones
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁһɡΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοριν",
    "ABESIJKMHOPCTXYaeijopcxysdhgABEZHIKMNOPTYXaopiv",
)
_LEET = str.maketrans("013457@$", "oieastas")
_LEET_WORD = re.compile(r"\b(?=[a-z0-9@$]*[a-z])(?=[a-z0-9@$]*[0-9@$])[a-z0-9@$]+\b", re.IGNORECASE)
_SPACED_LETTERS = re.compile(r"\b(?:[^\W\d_][ .\-*_·]){2,}[^\W\d_]\b")
_SPACE = re.compile(r"\s+")
ENCODED = re.compile(rf"[A-Za-z0-9+/_=-]{{{MIN_ENCODED_CHARS},}}")


def unmask(text: str) -> str:
    """NFKC (full-width, superscripts, ligatures), no format characters or combining marks, Latin look-alikes."""
    text = unicodedata.normalize("NFKC", text)
    decomposed = unicodedata.normalize("NFD", text)
    kept = "".join(ch for ch in decomposed if unicodedata.category(ch) not in ("Cf", "Mn", "Me"))
    return _SPACE.sub(" ", unicodedata.normalize("NFC", kept).translate(_LOOKALIKES)).strip()


def join_spaced_letters(text: str) -> str:
    """``i g n o r e`` and ``i.g.n.o.r.e`` read as ``ignore``."""
    return _SPACED_LETTERS.sub(lambda m: re.sub(r"[ .\-*_·]", "", m.group()), text)


def unleet(text: str) -> str:
    """Digits standing for letters inside words (``1gn0re``) read as letters; plain numbers stay."""
    return _LEET_WORD.sub(lambda m: m.group().translate(_LEET), text)


def instruction_spellings(text: str) -> list[str]:
    """What the instruction check reads: the unmasked text, letters joined, digits as letters, decoded base64."""
    plain = unmask(text)
    spellings = [plain, join_spaced_letters(plain), unleet(plain), unleet(join_spaced_letters(plain))]
    spellings += [unmask(decoded) for decoded in decoded_blobs(plain)]
    return list(dict.fromkeys(spellings))


def joined_runs(text: str) -> list[str]:
    """Runs of short tokens glued back together, from each starting token: ``g h p _ a 1`` -> ``ghp_a1``.

    Each start is its own candidate so that a word before the token (``is g h p _ ...``) does not
    glue onto it and hide the token's start from a detector that needs a word boundary.
    """
    tokens = text.split()
    runs: list[list[str]] = [[]]
    for token in tokens:
        if len(token) <= MAX_SHORT_TOKEN:
            runs[-1].append(token)
        elif runs[-1]:
            runs.append([])
    joined = []
    for run in runs:
        if len(run) >= MIN_RUN_TOKENS:
            joined.extend("".join(run[start:]) for start in range(min(len(run) - 1, MAX_RUN_STARTS)))
    return joined


def decoded_blobs(text: str) -> list[str]:
    """The text inside base64 or hex strings that decode to readable text."""
    decoded = []
    for blob in ENCODED.findall(text):
        for raw in (_b64(blob), _hex(blob)):
            readable = raw.decode("utf-8", "replace")
            if readable and sum(ch.isprintable() for ch in readable) >= MIN_PRINTABLE_SHARE * len(readable):
                decoded.append(readable)
    return decoded


def _b64(blob: str) -> bytes:
    bare = blob.rstrip("=")
    try:
        return base64.b64decode(bare.replace("-", "+").replace("_", "/") + "=" * (-len(bare) % 4), validate=True)
    except (binascii.Error, ValueError):
        return b""


def _hex(blob: str) -> bytes:
    try:
        return bytes.fromhex(blob) if len(blob) % 2 == 0 else b""
    except ValueError:
        return b""
