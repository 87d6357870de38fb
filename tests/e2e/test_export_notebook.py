"""Real kernels (nbclient): an exported session reruns to the same results, with the user's cells it needs
carried in or a one-line check of what nobody can make; and nobody there means no approval."""

from __future__ import annotations

import json

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.tools.python import DECLINED
from monad_notebook.config import Config
from monad_notebook.export import export_notebook
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call
from tests.e2e.jupyter import write_notebook
from tests.e2e.test_cell_kernel import run
from tests.export_script import run_session

pytestmark = pytest.mark.slow


def execute(path, workdir):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    resources = {"metadata": {"path": str(workdir)}}
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources=resources).execute()
    return notebook


def as_tool_result(outputs) -> str:
    """A cell's outputs written the way the python tool reports a run to the model."""
    streams = {"stdout": "", "stderr": ""}
    values = []
    for output in outputs:
        if output.output_type == "stream":
            streams[output.name] += output.text
        elif output.output_type == "execute_result":
            values.append(output.data["text/plain"])
    parts = [f"{name}:\n{text.rstrip()}" for name, text in streams.items() if text.strip()]
    parts += [f"value:\n{v}" if "\n" in v else f"value: {v}" for v in values]
    return "\n".join(parts) or "(no output)"


def test_an_exported_session_reruns_top_to_bottom_in_a_fresh_kernel_with_the_same_results(store, tmp_path):
    session = run_session(store)
    path, _ = export_notebook(store, "work", tmp_path / "work.ipynb")
    python_results = [m.content for m in session.history() if m.role == "tool" and m.name == "python"]
    failed, declined = python_results[1], python_results[2]
    assert failed.startswith("error: NameError") and declined == DECLINED
    ran_ok = [python_results[i] for i in (0, 3, 4)]
    rerun = execute(path, tmp_path)
    results = [as_tool_result(cell.outputs) for cell in rerun.cells if cell.cell_type == "code"]
    assert results == ran_ok
    assert all(output.output_type != "error" for cell in rerun.cells for output in cell.get("outputs", []))


def test_a_notebook_run_by_nbclient_asks_nobody_and_the_code_does_not_run(isolated_env, tmp_path):
    with FakeOpenAIServer() as model:
        model.queue(tool_call("python", {"code": "ran_unattended = True"}), "Could not run it.")
        config = {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": model.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "ask"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(config))
        write_notebook(
            isolated_env / "batch.ipynb",
            ["%load_ext monad_notebook", "%%monad --session batch\nSet a flag.", "print('flag' in dir())"],
        )
        notebook = execute(isolated_env / "batch.ipynb", isolated_env)
        told = model.chat_requests[1]["messages"][-1]["content"]
    assert told.startswith("not run: nobody approved this code")
    mimes = {key for cell in notebook.cells for output in cell.get("outputs", []) for key in output.get("data", {})}
    assert "application/vnd.jupyter.widget-view+json" not in mimes
    assert "ran_unattended" not in json.dumps(notebook.cells[2].outputs)
    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    try:
        assert [e.data["decision"] for e in store.list_events("batch", kind=ev.APPROVAL)] == ["no answer"]
    finally:
        store.close()


LOAD = "import pandas as pd\nsales = pd.DataFrame({'region': ['north', 'south', 'north'], 'amount': [5, 3, 4]})"
ASKED = "totals = sales.groupby('region').amount.sum()\nprint(totals.idxmax(), totals.max())"


def test_a_session_that_used_the_users_own_frame_exports_to_a_notebook_that_runs_top_to_bottom(isolated_env):
    from jupyter_client.manager import start_new_kernel

    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(tool_call("python", {"code": ASKED}), "North sold most.")
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
        try:
            run(kc, "%load_ext monad_notebook")
            run(kc, LOAD)  # the user's own cell, before any question
            run(kc, "%%monad --session sold\nWhich region sold most?")
            run(kc, "%monad export sold.ipynb")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    rerun = execute(isolated_env / "sold.ipynb", isolated_env)  # a fresh kernel: raises at the first error
    code = [cell for cell in rerun.cells if cell.cell_type == "code"]
    assert [(cell.metadata.get("monad", {}).get("user_cell"), cell.source) for cell in code] == [
        (2, LOAD),
        (None, ASKED),
    ]
    assert as_tool_result(code[-1].outputs) == "stdout:\nnorth 9"


def test_an_export_needing_what_no_cell_makes_stops_at_its_first_check_in_one_line(store, tmp_path):
    from nbclient.exceptions import CellExecutionError

    model = ScriptedModel([tool_call("python", {"code": "print(len(orders))"}), "Three orders."])
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}})
    session = Session("orders", config=config, store=store, model=model, namespace={"orders": [1, 2, 3]})
    session.ask("How many orders are there?")  # ``orders`` was there before: no cell of this kernel made it
    path, _ = export_notebook(store, "orders", tmp_path / "orders.ipynb")
    with pytest.raises(CellExecutionError) as stopped:
        execute(path, tmp_path)
    said = "define orders before running this notebook: the session's code uses them and no cell here makes them"
    assert stopped.value.ename == "NameError" and stopped.value.evalue == said
