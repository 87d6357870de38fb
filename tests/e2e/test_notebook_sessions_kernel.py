"""Two notebooks open at once, each with its own kernel as a Jupyter server starts it: two sessions, none shared
unasked; and shared on purpose, neither reports the names the other kernel holds as lost."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.test_cell_kernel import run, shown_text
from tests.notebook.test_ownership import notebook_file

pytestmark = pytest.mark.slow

MAKE = "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'amount': [1, 2]})"


def kernel_for(notebook):
    """A kernel as a Jupyter server starts one for ``notebook``: in its folder, the file named in JPY_SESSION_NAME."""
    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "JPY_SESSION_NAME": str(notebook)}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(notebook.parent), env=env)
    run(kc, "%load_ext monad_notebook")
    return km, kc


def said(request: dict) -> str:
    return json.dumps([m.get("content") for m in request["messages"]])


def test_two_notebooks_get_two_sessions_and_neither_sees_the_others_conversation_or_names(isolated_env, monkeypatch):
    first, second = isolated_env / "Untitled.ipynb", isolated_env / "newbie" / "first.ipynb"
    notebook_file(first)
    notebook_file(second)
    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        monkeypatch.setenv("MONAD_CONFIG", str(isolated_env / "agents.json"))
        server.queue(tool_call("python", {"code": MAKE}, id="call_sales"), "made it", "nothing yet", "still sales")
        with ThreadPoolExecutor(2) as pool:  # both open at once, as a user has them
            kernels = list(pool.map(kernel_for, (first, second)))
        try:
            run(kernels[0][1], "%%monad\nmake the sales frame")
            seen = shown_text(run(kernels[1][1], "%%monad\nwhat do we have?"))
            asked_in_second = said(server.chat_requests[-1])
            status = shown_text(run(kernels[1][1], "%monad status"))
            sessions = shown_text(run(kernels[1][1], "%monad sessions"))
            run(kernels[0][1], "%%monad\nand now?")
            asked_in_first = said(server.chat_requests[-1])
            run(kernels[1][1], "%monad session Untitled")  # shared on purpose: the first kernel still holds sales
            shared_status = shown_text(run(kernels[1][1], "%monad status"))
        finally:
            for km, kc in kernels:
                kc.stop_channels()
                km.shutdown_kernel(now=True)

    assert "make the sales frame" not in asked_in_second and "sales" not in asked_in_second
    assert "sales" not in status and "Not in the kernel now" not in status
    assert "make the sales frame" in asked_in_first and "what do we have?" not in asked_in_first
    assert "sales" in asked_in_first  # its own workspace still names what its code made
    rows = sessions.splitlines()
    assert rows[0].startswith("  Untitled  (") and rows[0].endswith(f"notebook {first.resolve()}")
    assert rows[1].startswith("* first  (") and rows[1].endswith(f"notebook {second.resolve()}")
    assert "monad:" not in seen  # a store with no earlier "default" session has nothing to point to
    assert "Untitled" in shared_status and "Not in the kernel now" not in shared_status
