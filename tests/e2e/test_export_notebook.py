"""Real kernels (nbclient): an exported session reruns to the same results, and nobody there means no approval."""

from __future__ import annotations

import json

import pytest

from monad_notebook import events as ev
from monad_notebook.agent.tools.python import DECLINED
from monad_notebook.export import export_notebook
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.jupyter import write_notebook
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
