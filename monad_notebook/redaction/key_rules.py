"""Private-key detectors: the armoured block, and a key's body seen without its armour.

A key reaches tool output whole (``cat id_rsa``) but also in pieces: a grep prints only the
lines that match, ``head`` and ``tail`` cut off one armour line, a file viewer or ``grep -n``
puts a line number before every line. So a key is found as

- a ``-----BEGIN ... PRIVATE KEY-----`` block, its lines bare or each behind a line prefix
  (``  12| ``, ``    12<tab>``, ``12:``, ``key.pem-12-``);
- its first body line alone: a DER private key opens with fixed bytes (a SEQUENCE holding a
  version, then an INTEGER, an AlgorithmIdentifier or an encryption scheme) and an OpenSSH key
  with ``openssh-key-v1``, so the base64 starts with known text (``MIIEpAIBAAK``, ``MHcCAQEE``,
  ``b3BlbnNzaC1rZXktdjE``); certificates and public keys start otherwise (``MIIDXTCC``,
  ``MIIBIjAN``), so they are left alone;
- body lines that end at the ``-----END ... PRIVATE KEY-----`` line (the output of ``tail``);
- PuTTY's ``Private-Lines:`` section;
- a middle piece: at least four consecutive full lines of random-looking base64 at the widths
  key writers use (64, 70 or 76 characters), unless the line above is another block's BEGIN
  line (a certificate) and the run opens as a certificate's DER body does (``MI``). The price:
  base64 wrapped at those widths with no header above, such as ``openssl base64`` output four
  lines long or more, is taken for a key too.
"""

from __future__ import annotations

import re

from monad_notebook.redaction.detector import Checker, Find, Rule, Spans, rule

_MIN_BODY = 40
_B64 = "[A-Za-z0-9+/]"
# What a viewer puts before a line: indentation, then "key.pem:" or "key.pem-", then "12:", "12-", "12|" or "12<tab>".
_PFX = r"[ \t]*(?:[^\s:|>-][^\s:|]{0,255}[:-])?(?:[0-9]{1,9}(?:[ \t]*[:|]|[\t-])[ \t]*)?"
_NUMBER_PFX = r"[ \t]*(?:[0-9]{1,9}(?:[ \t]*[:|]|[\t-])[ \t]*)?"  # the same without a file name: cheaper for RE2
_LINE_PFX = re.compile(_PFX.encode())
_END = r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
_BODY = rf"(?:\r?\n{_PFX}|\\[rn]|[A-Za-z0-9+/=]|[A-Za-z-]+: [^\r\n\\\"]*)*"
_KEY_START = "|".join(
    [
        f"MII{_B64}{{3}}IBA(?:AK|D[AC])",  # PKCS#1 RSA and DSA, PKCS#8: version 0, two-byte length
        f"MI[GH]{_B64}AgE(?:AM|BB)",  # PKCS#8 and SEC1 EC keys, one-byte length
        f"M{_B64}{{2}}CAQ(?:Aw|EE)",  # short PKCS#8 (Ed25519, X25519, Ed448) and SEC1 EC keys
        f"MI[IGH]{_B64}{{1,5}}(?:BgkqhkiG9w0BBQ|GCSqGSIb3DQEF|BgoqhkiG9w0BDAE|GCiqGSIb3DQEMAQ)",  # encrypted PKCS#8
        "b3BlbnNzaC1rZXktdjE",  # "openssh-key-v1"
    ]
)
_BODY_LINE = rf"{_PFX}{_B64}{{4,}}={{0,2}}[ \t]*\r?$"
_WIDE = rf"{_B64}{{64}}(?:{_B64}{{6}})?[ \t]*\r?$"
_RUN_LINES = 4
_DIGIT, _UPPER, _LOWER = re.compile(rb"[0-9]"), re.compile(rb"[A-Z]"), re.compile(rb"[a-z]")


def _check_block(data: bytes, spans: Spans) -> list[Find]:
    """A key block needs a body: a header alone is a mention in docs, not a key."""
    start, end = spans[0]
    header_end = data.find(b"-----", start + 10) + 5
    return [("private-key", start, end)] if end - header_end >= _MIN_BODY else []


def _long_enough(group: int) -> Checker:
    def check(data: bytes, spans: Spans) -> list[Find]:
        start, end = spans[group]
        return [("private-key", start, end)] if end - start >= _MIN_BODY else []

    return check


def _check_run(data: bytes, spans: Spans) -> list[Find]:
    """Full-width base64 lines are key material when they look random and no public block's header is above.

    A line that does not look random (hex, one case only) splits the run rather than clearing
    it, so a key's middle next to a hash or a hex dump is still found.
    """
    start, end = spans[1]
    line_start = spans[0][0]
    above = data[data.rfind(b"\n", 0, max(0, line_start - 1)) + 1 : line_start]
    first = data[start : data.find(b"\n", start) if b"\n" in data[start:end] else end]
    der = first[_LINE_PFX.match(first).end() :].lstrip().startswith(b"MI")  # a certificate's body opens so
    if (der and b"-----BEGIN" in above and b"PRIVATE KEY" not in above) or b"Public-Lines:" in above:
        return []
    finds: list[Find] = []
    run: list[tuple[int, int]] = []
    offset = start
    for line in [*data[start:end].split(b"\n"), None]:
        if line is not None:
            body = line[_LINE_PFX.match(line).end() :].strip()
            if len(body) < 64 or (_DIGIT.search(body) and _UPPER.search(body) and _LOWER.search(body)):
                run.append((offset, offset + len(line)))
                offset += len(line) + 1
                continue
            offset += len(line) + 1
        if sum(1 for a, b in run if b - a >= 64) >= _RUN_LINES:
            finds.append(("private-key", run[0][0], run[-1][1]))
        run = []
    return finds


KEY_RULES: list[Rule] = [
    rule(
        "private-key",
        rf"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----{_BODY}(?:{_END})?",
        "-----begin",
        0,
        _check_block,
    ),
    rule(
        "private-key",
        rf"(?m)\b(?:{_KEY_START}){_B64}*={{0,2}}(?:\r?\n{_BODY_LINE}|\\r|\\n|[A-Za-z0-9+/=])*(?:(?:\r?\n{_PFX})?{_END})?",
        "ibaak ibada ibadc agea ageb caqaw caqee qhkig9w0b qgsib3dqe b3blbnnzac1rzxktdje",
        0,
        _long_enough(0),
    ),
    rule(
        "private-key",
        rf"(?m)^{_PFX}({_B64}{{4,}}={{0,2}}[ \t]*\r?$(?:\n{_BODY_LINE})*\n{_PFX}{_END})",
        "-----end",
        1,
        _long_enough(1),
    ),
    rule(
        "private-key",
        rf"(?m)Private-Lines:[ \t]*[0-9]+[ \t]*\r?\n({_BODY_LINE}(?:\n{_BODY_LINE})*)",
        "private-lines",
        1,
        _long_enough(1),
    ),
    rule(
        "private-key",
        rf"(?m)^{_NUMBER_PFX}({_WIDE}(?:\n{_NUMBER_PFX}{_WIDE}){{{_RUN_LINES - 1},}}"
        rf"(?:\n{_NUMBER_PFX}{_B64}{{4,69}}={{0,2}}[ \t]*\r?$)?(?:\n{_NUMBER_PFX}{_END})?)",
        "",
        1,
        _check_run,
    ),
]
