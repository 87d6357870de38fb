"""Code as highlighted HTML: the approval view (hidden characters as markers), every text escaped.

Highlighting colours only what ``code_view.shown_lines`` already made visible, so a marker such
as ``<U+202E>`` is drawn as a marker and never hidden by a colour. Pygments (installed with
IPython) finds the tokens; without it the code is shown plain. Colours come from the notebook
theme's CSS variables, with fallbacks for frontends that define none.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from monad_notebook.approval.code_view import shown_lines

_MARKER = re.compile(r"<(?:NUL|BS|VT|FF|CR|ESC|DEL|U\+[0-9A-F]{4,6})>")

# Token type name prefixes (most specific first) -> a short class.
_KINDS = (
    ("Token.Name.Builtin", "b"),
    ("Token.Name.Function", "f"),
    ("Token.Name.Class", "f"),
    ("Token.Name.Decorator", "f"),
    ("Token.Keyword", "k"),
    ("Token.Literal.String", "s"),
    ("Token.Literal.Number", "n"),
    ("Token.Comment", "c"),
    ("Token.Operator.Word", "k"),
    ("Token.Operator", "o"),
)

CODE_CSS = """
.monad-code { font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px);
  line-height: 1.45; background: var(--jp-cell-editor-background, #f5f5f5); color: var(--jp-content-font-color1, #111);
  border: 1px solid var(--jp-border-color2, #ddd); border-radius: 3px; padding: 4px 0; margin: 4px 0; }
.monad-line { white-space: pre-wrap; overflow-wrap: anywhere; padding: 0 8px 0 3.6em; text-indent: -2.8em; }
.monad-line::before { content: attr(data-n); display: inline-block; width: 2.2em; margin-right: 0.6em;
  text-align: right; color: var(--jp-ui-font-color3, #999); text-indent: 0; user-select: none; }
.monad-code .k { color: var(--jp-mirror-editor-keyword-color, #008000); font-weight: bold; }
.monad-code .b { color: var(--jp-mirror-editor-builtin-color, #008000); }
.monad-code .f { color: var(--jp-mirror-editor-def-color, #0000ff); }
.monad-code .s { color: var(--jp-mirror-editor-string-color, #ba2121); }
.monad-code .n { color: var(--jp-mirror-editor-number-color, #080); }
.monad-code .c { color: var(--jp-mirror-editor-comment-color, #408080); font-style: italic; }
.monad-code .o { color: var(--jp-mirror-editor-operator-color, #aa22ff); }
.monad-code .h { color: var(--jp-error-color1, #c00); background: var(--jp-error-color3, #fdd);
  border: 1px solid var(--jp-error-color1, #c00); border-radius: 2px; font-weight: bold; }
"""


def _kind(token_type: object) -> str:
    name = str(token_type)
    return next((short for prefix, short in _KINDS if name.startswith(prefix)), "")


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    """(class, text) pairs covering ``text`` exactly, in order."""
    try:
        from pygments.lexers import PythonLexer
    except ImportError:  # pragma: no cover - IPython brings Pygments
        yield "", text
        return
    for token_type, value in PythonLexer(stripnl=False, ensurenl=False).get_tokens(text):
        yield _kind(token_type), value


def _classes(lines: list[str]) -> list[list[str]]:
    """One class per character of each shown line; markers get ``h`` whatever the lexer thought."""
    classes: list[list[str]] = [[] for _ in lines]
    row = 0
    for kind, value in _tokens("\n".join(lines)):
        for index, part in enumerate(value.split("\n")):
            if index:
                row += 1
            if part and row < len(lines):
                classes[row].extend([kind] * len(part))
    for line, marks in zip(lines, classes, strict=True):
        marks.extend([""] * (len(line) - len(marks)))
        for found in _MARKER.finditer(line):
            marks[found.start() : found.end()] = ["h"] * (found.end() - found.start())
    return classes


def _row(line: str, marks: list[str]) -> str:
    out, start = [], 0
    for end in range(1, len(line) + 1):
        if end == len(line) or marks[end] != marks[start]:
            text = html.escape(line[start:end], quote=False)
            out.append(f'<span class="{marks[start]}">{text}</span>' if marks[start] else text)
            start = end
    return "".join(out)


def code_html(code: str) -> str:
    """The code as numbered, highlighted HTML rows: one row per line Python or IPython would see."""
    lines = shown_lines(code) or [""]
    rows = (
        f'<div class="monad-line" data-n="{n}">{_row(line, marks)}</div>'
        for n, (line, marks) in enumerate(zip(lines, _classes(lines), strict=True), 1)
    )
    return f'<div class="monad-code">{"".join(rows)}</div>'
