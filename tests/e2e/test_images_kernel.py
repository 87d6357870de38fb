"""A chart the agent draws in a real kernel: shown to the user, sent to a model that sees, exported."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image as PILImage

from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.kernel_frontend import Frontend

pytestmark = pytest.mark.slow

PLOT = """
import matplotlib.pyplot as plt
import pandas as pd
churn = pd.DataFrame({"week": [1, 2, 3, 4], "north": [3.1, 2.4, 2.9, 3.3], "south": [2.2, 2.8, 2.5, 2.0]})
churn.plot(x="week", title="Weekly churn by region")
plt.ylabel("churn %")
"""


def test_the_inline_figure_reaches_the_user_and_a_model_that_sees_and_the_export(isolated_env):
    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "gpt-4o", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
            "context": {"images": {"maxSide": 400}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(tool_call("python", {"code": PLOT}), "North dips in week 2.")
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")
            reply = frontend.run("%%monad\nPlot weekly churn by region and tell me what you see.")
            shown = [m for _, m in frontend.seen if m["msg_type"] == "display_data"]
            frontend.run("%monad export churn.ipynb")
        finally:
            frontend.close()
        second = server.chat_requests[1]["messages"]
    assert reply["status"] == "ok"
    assert any("image/png" in m["content"]["data"] for m in shown)  # the user saw the chart in the cell
    tool = next(m for m in second if m["role"] == "tool")
    assert "'Weekly churn by region' (x: week, y: churn %)" in tool["content"]
    follow = second[second.index(tool) + 1]
    (part,) = [p for p in follow["content"] if p["type"] == "image_url"]
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    sent = PILImage.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert max(sent.size) == 400
    notebook = json.loads((isolated_env / "churn.ipynb").read_text())
    (code,) = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert any("image/png" in o.get("data", {}) for o in code["outputs"])
