"""A stand-in for a notebook's output area: what a cell shows, in order, as a Jupyter frontend keeps it.

Displays append an output; an update replaces the output with the same display id in place;
stdout and stderr writes append (or extend) a stream output, as the kernel's stream messages do.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from IPython.core.displaypub import DisplayPublisher

_TAGS = re.compile(r"<style>.*?</style>|<[^>]+>", re.S)


@dataclass
class Output:
    kind: str  # "display" or "stream"
    data: dict[str, Any] = field(default_factory=dict)
    display_id: str | None = None
    text: str = ""  # a stream's text

    @property
    def visible_text(self) -> str:
        """Roughly what a person reads: the HTML without tags and styles, else Markdown, else plain text."""
        if self.kind == "stream":
            return self.text
        if "text/html" in self.data:
            return html.unescape(_TAGS.sub("", self.data["text/html"]))
        return str(self.data.get("text/markdown", self.data.get("text/plain", "")))


class Frontend(DisplayPublisher):
    def __init__(self) -> None:
        super().__init__()
        self.outputs: list[Output] = []
        self.stdout = _Stream(self, "stdout")

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs) -> None:
        display_id = (transient or {}).get("display_id")
        if update:
            for output in self.outputs:
                if output.display_id == display_id:
                    output.data = dict(data)
            return
        self.outputs.append(Output("display", dict(data), display_id))

    def clear_output(self, wait: bool = False) -> None:
        self.outputs = []

    def write(self, name: str, text: str) -> None:
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last.kind == "stream" and last.display_id == name:
            last.text += text
        else:
            self.outputs.append(Output("stream", display_id=name, text=text))

    def markdown(self) -> list[str]:
        return [o.data["text/markdown"] for o in self.outputs if "text/markdown" in o.data]

    def html(self) -> list[str]:
        return [o.data["text/html"] for o in self.outputs if "text/html" in o.data]

    def texts(self) -> list[str]:
        return [o.visible_text for o in self.outputs]


class _Stream:
    def __init__(self, frontend: Frontend, name: str) -> None:
        self.frontend = frontend
        self.name = name

    def write(self, text: str) -> int:
        self.frontend.write(self.name, text)
        return len(text)

    def flush(self) -> None:
        """Writes are shown at once."""

    def isatty(self) -> bool:
        return False
