"""A real kernel restarted: the first request after it says what the kernel lost, and so does %monad status."""

from __future__ import annotations

import json

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.test_cell_kernel import run, shown_text

pytestmark = pytest.mark.slow

MAKE = "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'amount': [1, 2]})"


def workspace_of(messages: list[dict]) -> str:
    found = [m["content"] for m in messages if "<workspace>" in str(m.get("content"))]
    return found[-1] if found else ""


def test_after_a_kernel_restart_the_first_request_and_status_name_what_was_lost(isolated_env):
    from jupyter_client.manager import start_new_kernel

    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(tool_call("python", {"code": MAKE}, id="call_sales"), "made it", "I can rerun call_sales")
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
        try:
            run(kc, "%load_ext monad_notebook")
            run(kc, "%%monad --session rs\nmake the sales frame")
            before = workspace_of(server.chat_requests[-1]["messages"])
            assert "- sales: DataFrame 2 rows x 2 cols [region, amount] (call_sales, turn 1)" in before

            km.restart_kernel(now=True)
            kc.wait_for_ready(timeout=60)
            run(kc, "%load_ext monad_notebook")
            run(kc, "%%monad --session rs\nwhat do we have?")
            after = workspace_of(server.chat_requests[-1]["messages"])
            lost = after[after.index("Not in the kernel now") :]
            assert "- sales: DataFrame 2 rows x 2 cols [region, amount] (call_sales, turn 1)" in lost
            status = shown_text(run(kc, "%monad status"))
            told = "Not in the kernel now (lost in a restart, rerun what made them): sales (made by call_sales"
            assert told in status
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
