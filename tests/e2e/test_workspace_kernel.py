"""A real kernel: ``%monad rewind`` takes the conversation back as a copy, puts a turn's files and names back, and is
undone; after a restart the first request, the first cell and ``%monad status`` say what the kernel lost, and
``%monad rebuild`` reruns the agent's calls and the user's own cell in the order they first ran."""

from __future__ import annotations

import json

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.test_cell_kernel import run, shown_text

pytestmark = pytest.mark.slow

MAKE = "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'amount': [1, 2]})\nsales.to_csv('sales.csv')"
SCALE = "base = 20\nsales['amount'] = sales['amount'] * base\nsales.to_csv('sales.csv')\nextra = len(sales)"


def workspace_of(messages: list[dict]) -> str:
    found = [m["content"] for m in messages if "<workspace>" in str(m.get("content"))]
    return found[-1] if found else ""


def printed(kc, code: str) -> str:
    return shown_text(run(kc, code)).strip()


def test_a_rewind_is_undone_and_after_a_restart_what_was_lost_is_named_then_rebuilt(isolated_env, monkeypatch):
    from jupyter_client.manager import start_new_kernel

    monkeypatch.setenv("IPYTHONDIR", str(isolated_env.parent / "ipython"))  # the kernels' own history database
    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        make, scale = (tool_call("python", {"code": c}, id=i) for c, i in ((MAKE, "call_sales"), (SCALE, "call_scale")))
        server.queue(make, "made it", scale, "scaled", "I can rerun call_sales")
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
        try:
            run(kc, "%load_ext monad_notebook")
            run(kc, "%%monad --session rs\nmake the sales frame")
            before = workspace_of(server.chat_requests[-1]["messages"])
            assert "- sales: DataFrame 2 rows x 2 cols [region, amount] (call_sales, turn 1)" in before
            first_csv = (isolated_env / "sales.csv").read_bytes()
            run(kc, "bonus = len(sales) * 3")
            run(kc, "%%monad\nscale them")
            second_csv = (isolated_env / "sales.csv").read_bytes()

            said = printed(kc, "%monad rewind 2")
            assert said.startswith("rewound to before turn 2: the conversation goes on as session 'rs@turn2'")
            assert "files and names as they were before turn 2 (everything put back)" in said
            assert "names removed: base, extra" in said and "names given their earlier value: sales" in said
            assert (isolated_env / "sales.csv").read_bytes() == first_csv
            assert printed(kc, "print(bonus, 'extra' in dir(), list(sales.amount))") == "6 False [1, 2]"
            undone = printed(kc, "%monad rewind --undo")
            assert undone.startswith("back in session 'rs' with every turn; the rewound copy stays as session 'rs@t")
            assert "the files and names are back as they were before the rewind" in undone
            assert (isolated_env / "sales.csv").read_bytes() == second_csv
            assert printed(kc, "print(base, extra, list(sales.amount))") == "20 2 [20, 40]"

            km.restart_kernel(now=True)
            kc.wait_for_ready(timeout=60)
            run(kc, "%load_ext monad_notebook")
            offered = printed(kc, "%%monad --session rs\nwhat do we have?")
            assert "monad: this kernel lost 4 name(s)" in offered and "%monad rebuild reruns the code" in offered
            after = workspace_of(server.chat_requests[-1]["messages"])
            lost = after[after.index("Not in the kernel now") :]
            assert "- sales: DataFrame 2 rows x 2 cols [region, amount] (call_sales, turn 1)" in lost
            status = printed(kc, "%monad status")
            assert (
                "Not in the kernel now (lost in a restart, rerun what made them): extra (made by call_scale" in status
            )

            said = printed(kc, "%monad rebuild")
            steps = [line for line in said.splitlines() if line.startswith("step ")]
            assert steps == [
                "step 1 of 3, call_sales (turn 1): ok",
                "step 2 of 3, your cell In [3]: ok",
                "step 3 of 3, call_scale (turn 2): ok",
            ]
            assert "back: 4 of 4 lost name(s)" in said
            assert printed(kc, "print(base, bonus, extra, list(sales.amount))") == "20 6 2 [20, 40]"
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
