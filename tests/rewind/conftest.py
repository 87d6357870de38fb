"""The rewind tests share the workspace tests' shell: IPython's in-process shell with a namespace of the test's own."""

from __future__ import annotations

from tests.workspace.conftest import shell

__all__ = ["shell"]
