"""The live context panel for notebooks, and its plain-text twin for terminals.

``MonadPanel`` needs anywidget; it is imported lazily so ``text_report`` works without it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["MonadPanel", "PanelApprover", "status_line", "text_report"]

_LAZY = {
    "MonadPanel": "monad_notebook.widget.panel",
    "PanelApprover": "monad_notebook.approval.asking",
    "status_line": "monad_notebook.widget.report",
    "text_report": "monad_notebook.widget.report",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'monad_notebook.widget' has no attribute {name!r}")
