"""The notebook tools in a real kernel, driven as VS Code drives it (no extension) and as nbclient runs it.

VS Code sends each cell's id (its own URI, not the nbformat id), allows input, draws widgets and
names the notebook file in ``__vsc_ipynb_file__``; it runs no JupyterLab extension. So the review
is in the ``%%monad`` cell's output and the tool waits for it; one accepted new cell comes back
through ``set_next_input``; a change to a cell is shown as code to copy. nbclient sends no cell id
and allows no input: no notebook is open, and the notebook tools are not offered.
"""

from __future__ import annotations

import json
import time

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call, tool_calls
from tests.e2e.kernel_frontend import Frontend, Views

pytestmark = pytest.mark.slow


def saved_notebook(path, cells: list[tuple[str, str]]) -> None:
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "id": cid,
                        "cell_type": "code",
                        "source": src,
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                    }
                    for cid, src in cells
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )


def configure(workdir, server: FakeOpenAIServer) -> None:
    agents = {"models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0}}}
    (workdir / "agents.json").write_text(json.dumps(agents))


def test_a_frontend_without_the_extension_reviews_in_the_cell_output_and_gets_one_new_cell_after_the_turn(
    isolated_env,
):
    ask = "%%monad --session vs\nTidy up."
    notebook = isolated_env / "analysis.ipynb"
    saved_notebook(notebook, [("load", "%load_ext monad_notebook"), ("data", "x = 1"), ("ask", ask)])
    with FakeOpenAIServer() as server:
        configure(isolated_env, server)
        server.queue(
            tool_call("read_notebook", {}),
            tool_calls(
                tool_call("insert_cell", {"cell_type": "code", "cell_source": "x * 2"}),
                tool_call("overwrite_cell_source", {"cell_id": "data", "cell_source": "x = 2"}),
            ),
            "Done.",
        )
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")
            frontend.run(f"__vsc_ipynb_file__ = {str(notebook)!r}")  # VS Code sets it when the kernel starts
            views = Views()
            prompts: list[dict] = []

            def draw_and_accept(msg: dict) -> None:
                drawn = views.drawn(msg)
                if drawn:
                    frontend.custom(drawn[0], {"type": "shown", "id": drawn[1]})
                    frontend.custom(drawn[0], {"type": "approval", "id": drawn[1], "run": True})

            started = time.monotonic()
            reply = frontend.run(
                ask, cell_id="vscode-notebook-cell:/analysis.ipynb#W2", stdin=prompts.append, on_iopub=draw_and_accept
            )
            took = time.monotonic() - started
            shown = frontend.text()
            frontend.seen.clear()
            frontend.run("%monad status", cell_id="vscode-notebook-cell:/analysis.ipynb#W3")
            status = frontend.text()
        finally:
            frontend.close()
        listing, inserted, changed = [m["content"] for m in server.chat_requests[-1]["messages"] if m["role"] == "tool"]
        offered = {t["function"]["name"] for t in server.chat_requests[0]["tools"]}

    assert reply["status"] == "ok" and prompts == [] and took < 30, (reply, took)
    assert [p["text"] for p in reply["payload"] if p["source"] == "set_next_input"] == ["x * 2"]
    assert listing.startswith("notebook analysis.ipynb: 3 cells as last saved")
    assert "[2] id ask · code · not run · the running %%monad cell (this conversation)" in listing
    assert "accepted; it will be inserted below the %%monad cell when this turn ends" in inserted
    assert "accepted; this frontend cannot change cell data from the kernel, so the source is shown" in changed
    assert {"read_notebook", "insert_cell", "overwrite_cell_source"} <= offered
    assert "Accepted." in shown and "Accepted: copy this into cell data:\nx = 2" in shown
    assert "This frontend has no monad-notebook extension" in status
    assert json.loads(notebook.read_text())["cells"][1]["source"] == "x = 1"


def test_an_nbclient_run_offers_no_notebook_tool_and_a_call_gets_one_line(isolated_env):
    import nbformat
    from nbclient import NotebookClient

    with FakeOpenAIServer() as server:
        configure(isolated_env, server)
        server.queue(tool_call("read_notebook", {}), "No notebook here.")
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext monad_notebook"),
            nbformat.v4.new_code_cell("%%monad --session batch\nRead my notebook."),
            nbformat.v4.new_code_cell("%monad status"),
        ]
        NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(isolated_env)}}
        ).execute()
        requests = server.chat_requests
    offered = {t["function"]["name"] for t in requests[0]["tools"]}
    (result,) = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    shown = "\n".join(
        o.get("text", "") + o.get("data", {}).get("text/plain", "") for cell in nb.cells for o in cell.outputs
    )
    assert not offered & {"read_notebook", "read_cell", "insert_cell", "overwrite_cell_source", "execute_cell"}
    assert result == (
        "error: read_notebook: no notebook is open here (a script, nbclient or papermill run): "
        "no cell can be read or changed"
    )
    assert "No notebook here." in shown and "No notebook is open to this session" in shown


def test_a_cell_the_agent_queued_starts_no_turn_whichever_way_its_code_asks_for_one(isolated_env):
    by_magic = "name = 'mon' + 'ad'\nget_ipython().run_cell_magic(name, '--session q', 'Once more.')"
    by_api = "from monad_notebook import Session\ntry:\n    Session('q2').ask('Once more.')\nexcept Exception as e:\n"
    by_api += "    print(e)"
    with FakeOpenAIServer() as server:
        configure(isolated_env, server)
        server.queue("Asked by the user.")
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")
            # what execute_cell does once the notebook has queued the cells behind the turn
            frontend.run(
                "from monad_notebook.notebook.agent_runs import AGENT_RUNS\n[AGENT_RUNS.queue(c) for c in 'ab']"
            )
            frontend.run(by_magic, cell_id="a")
            frontend.run(by_api, cell_id="b")
            refused, sent_meanwhile = frontend.text(), len(server.chat_requests)
            frontend.run(by_magic, cell_id="a")  # the user runs the cell again: their turn runs
            answered = frontend.text()
        finally:
            frontend.close()
    line = "this cell was run by the agent (execute_cell), and no turn starts from a cell the agent ran"
    assert refused.count(line) == 2 and sent_meanwhile == 0
    assert "Asked by the user." in answered and len(server.chat_requests) == 1
