"""examples/quickstart.ipynb executed by a real kernel (nbclient), offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from monad_notebook.store.lance import LanceStore
from tests.e2e.jupyter import EXAMPLES, cell_text, execute

pytestmark = pytest.mark.slow


def test_quickstart_runs_offline_in_a_real_kernel_and_persists(isolated_env, tmp_path):
    nb = execute(EXAMPLES / "quickstart.ipynb", isolated_env)
    by_source = {cell.source.splitlines()[-1]: cell_text(cell) for cell in nb.cells if cell.cell_type == "code"}
    loaded = by_source["Load data/sales.csv and tell me what's in it."]
    assert "scripted demo model, no LLM" in loaded and "936 rows" in loaded
    assert "South" in by_source["Which region grew fastest last quarter?"]
    assert "region" in by_source['sales.groupby("region")["revenue"].sum().round(0)']
    assert "The window holds" in by_source["%monad status"] and "scripted-demo" in by_source["%monad status"]
    recap = by_source["Recap what we found so far."]
    assert "Which region grew fastest last quarter?" in recap and "revenue growth" in recap
    store = LanceStore(Path(isolated_env.parent / "monad-home" / "db"))
    stored = store.load_messages("quickstart")
    assert [m.role for m in stored].count("user") == 3
    assert any(m.role == "tool" and "936 rows" in m.content for m in stored)
    store.close()
