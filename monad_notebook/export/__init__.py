"""Keeping the work: a session as a notebook that runs top to bottom, and the last turn's code.

``notebook.py`` writes the notebook from the stored transcript; ``code_names.py`` reads which names a
piece of code needs and makes; ``user_cells.py`` finds what the session's code needs that the user's own
cells made (carried in from the kernel's history) or that nobody can say how to make (checked first).
"""

from __future__ import annotations

from monad_notebook.export.notebook import (
    CodeRun,
    ExportStore,
    RunOutput,
    build_notebook,
    code_runs,
    export_notebook,
    last_turn_code,
    parse_run,
)

__all__ = [
    "CodeRun",
    "ExportStore",
    "RunOutput",
    "build_notebook",
    "code_runs",
    "export_notebook",
    "last_turn_code",
    "parse_run",
]
