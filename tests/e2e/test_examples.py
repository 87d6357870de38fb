"""The teaching notebooks in examples/, executed end to end by a real kernel (nbclient), offline.

Assertions are on what a reader sees in the cell outputs, plus what the store kept afterwards.
"""

from __future__ import annotations

import re

import pytest

from monad_notebook.provider.local_embedder import local_model_files
from monad_notebook.store.lance import LanceStore
from tests.e2e.jupyter import EXAMPLES, cell_text, execute

pytestmark = pytest.mark.slow

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class Outputs:
    """The executed code cells of a notebook, looked up by a piece of their source."""

    def __init__(self, nb) -> None:
        self.cells = [cell for cell in nb.cells if cell.cell_type == "code"]

    def cell(self, source: str):
        matches = [cell for cell in self.cells if source in cell.source]
        assert len(matches) == 1, f"{len(matches)} code cells contain {source!r}"
        return matches[0]

    def text(self, source: str) -> str:
        return cell_text(self.cell(source))

    def mimes(self, source: str) -> set[str]:
        return {mime for output in self.cell(source).get("outputs", []) for mime in output.get("data", {})}

    def errors(self) -> list[str]:
        return [f"{o.ename}: {o.evalue}" for c in self.cells for o in c.get("outputs", []) if o.output_type == "error"]


def test_committed_example_notebooks_carry_no_outputs():
    import nbformat

    for name in ("data_exploration.ipynb", "context_cascade_tour.ipynb"):
        nb = nbformat.read(EXAMPLES / name, as_version=4)
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


def test_data_exploration_runs_on_the_labelled_scripted_model_and_hands_its_variables_to_the_user(isolated_env):
    out = Outputs(execute(EXAMPLES / "data_exploration.ipynb", isolated_env))
    assert out.errors() == []
    loaded = out.text("Load data/sales.csv and tell me what's in it.")
    assert "scripted demo model, no LLM" in loaded and "936 rows" in loaded
    assert "**South** grew fastest last quarter" in out.text("Which region grew fastest last quarter?")
    assert "South" in out.text('sales.groupby("region")["units"]')
    bars = out.text("bars = (growth")
    assert re.search(r"South +20\.9 +#{30}", bars)
    assert "revenue_share_%" in out.text('read_csv("region_summary.csv"')
    assert "data-exploration" in out.text("%monad status") and "The window holds" in out.text("%monad status")
    assert "tool_result" in out.text("%monad prompt") and "tools" in out.text("%monad prompt")
    assert WIDGET_VIEW in out.mimes("%monad panel")
    assert "Which region grew fastest last quarter?" in out.text("Recap what we found so far.")
    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    assert [m.role for m in store.load_messages("data-exploration")].count("user") == 4
    store.close()


def test_the_cascade_tour_shows_each_stage_happen_with_its_evidence(isolated_env):
    out = Outputs(execute(EXAMPLES / "context_cascade_tour.ipynb", isolated_env))
    assert out.errors() == []
    cut = out.text("marker = next(")
    assert 'read_tool_output({"id": "call_shipments", "offset": ' in cut and "kept all 20,600" in cut

    evicted = out.text("for result in received_tool_results():")
    assert re.search(r'\[context-cleared\] read_file output \(\d+ tokens\): read_tool_output\(\{"id": "call_', evicted)
    assert "'tool_call_ids': ['call_shipments']" in evicted and "context.evicted {'reclaimed': " in evicted
    reclaimed = re.search(r"reclaimed so far: ([\d,]+) tokens", evicted)
    assert reclaimed and int(reclaimed[1].replace(",", "")) > 0

    recovered = out.text("page = received_tool_results()[-1]")
    assert "shipment 0023: pallets=6 dock=D3 carrier=C2" in recovered
    assert "the model had not seen these bytes before: True" in recovered
    assert "the exact bytes came back: True" in recovered

    shrink = re.search(r"the window went from (\d+) to (\d+) messages", out.text("fast_tier.queue("))
    assert shrink and int(shrink[2]) < int(shrink[1])
    summary = out.text("print(session.summary.text)")
    assert "context.compaction.finished" in summary and "## Open Tasks" in summary
    assert "Identifiers (verbatim):" in summary and "read_tool_output id=call_shipments" in summary

    plan = out.text("What should we do next?")
    assert plan.rstrip().endswith("</plan>") and "compare dock D3 delays" in plan

    retrieval = out.text("if local_model_files() is None:")
    if local_model_files() is not None:
        assert "<related_context>" in retrieval and "LIS-7734 and its reports go to Ana Costa" in retrieval
    else:
        assert 'pip install "monad-notebook[local]"' in retrieval

    memory = out.text("pending = session.memory.pending_suggestions")
    assert "memory.suggestion" in memory and "accepted: Reports for the Lisbon warehouse go to Ana Costa" in memory
    assert '- "Reports for the Lisbon warehouse go to Ana Costa"' in out.text("Who gets the Lisbon reports?")

    assert WIDGET_VIEW in out.mimes("MonadPanel.for_session(session)")
    report = out.text("MonadPanel.for_session(session)")  # a panel opened after the fact replays the history
    assert re.search(r"E turn [1-9]\d* · step [1-9]\d*: cleared \d+ old tool result\(s\), \u2212[\d,]+ tokens", report)
    assert re.search(r"C turn [1-9]\d* · step [1-9]\d*: summarized older messages", report)
    assert "plan" in out.text("print(render_prompt_record(")
    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    assert "## Next Step" in store.load_summary("cascade-tour").text
    assert any("Ana Costa" in fact.text for fact in store.list_facts())
    store.close()
