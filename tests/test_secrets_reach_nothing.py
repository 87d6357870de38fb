"""Keys planted in every surface a notebook session has reach no LanceDB file, no request, no panel and no cell output.

A real IPython shell runs the magics, the fake OpenAI-compatible server records every request,
LanceDB keeps its files in the test's own directory (grepped raw), and the cell's outputs are
kept as a Jupyter frontend keeps them. Each key is planted as it is and glued to a word.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call, tool_calls
from monad_notebook.widget.report import state_from_session

GITHUB = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
AWS = "AKIA" + "QX7ZL2MPK4RT6WV3"
OPENAI = "sk-proj-" + "T4kW9qZ2vB7xR1mN8pL3sD6f" * 3
KEYS = (GITHUB, AWS, OPENAI)
BRIEFING = (  # the fast model writes a key it was never sent (read off an image, made up): it is kept redacted
    "## Objective\nread the settings\n## Decisions & Facts\n- the settings file was read\n## Files & State\n"
    f"- secrets.env, backup_{GITHUB}.json\n## Open Tasks\n- none\n## Next Step\nanswer the user"
)


@pytest.fixture
def notebook(ip, isolated_env, rich):
    with FakeOpenAIServer() as server:
        config = {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
            "context": {"summarize": {"keepRecent": 1}},
            "agent": {"systemPrompt": f"You help with data. The team's profile is creds_{AWS}."},
        }
        (isolated_env / "agents.json").write_text(json.dumps(config))
        ip.run_line_magic("reload_ext", "monad_notebook")
        yield server
        for name in [n for n in ip.user_ns if any(key in n for key in KEYS) or n in ("frame", "fields", "pd", "np")]:
            del ip.user_ns[name]


def warn_from_a_worker(text: str) -> None:
    worker = threading.Thread(target=lambda: logging.getLogger("monad_notebook.store").warning(text))
    worker.start()
    worker.join()


def test_keys_planted_everywhere_reach_no_stored_file_no_request_no_panel_and_no_cell_output(
    ip, notebook, rich, capsys, isolated_env
):
    (isolated_env / "secrets.env").write_text(
        f"GITHUB_TOKEN={GITHUB}\nBACKUP=backup_{GITHUB}.json\nAWS_KEY_FILE=creds_{AWS}.csv\n"
        + "filler line\n" * 3000
        + f"OPENAI={OPENAI}\ncolumn openai_{OPENAI}\n"
    )
    ip.run_cell(
        "import numpy as np, pandas as pd\n"
        f"globals()['creds_' + {AWS[:10]!r} + {AWS[10:]!r}] = 1\n"
        f"fields = np.zeros(2, dtype=[({GITHUB[:12]!r} + {GITHUB[12:]!r}, '<f8')])\n"
        f"frame = pd.DataFrame({{'openai_' + {OPENAI[:12]!r} + {OPENAI[12:]!r}: [1]}})\n",
        store_history=True,
    )
    reads = tool_calls(tool_call("read_file", {"path": "secrets.env"}), tool_call("list_variables", {}))
    notebook.queue(reads, tool_call("describe", {"name": "fields"}), "Read them.", BRIEFING, "Still here.")
    ip.run_cell_magic("monad", "--session planted", f"my key is {OPENAI}; the file is creds_{AWS}.csv\n")
    warn_from_a_worker(f"cannot write backup_{GITHUB}.json")
    ip.run_line_magic("monad", "compact")
    ip.run_cell_magic("monad", "", f"and tok{GITHUB}?")
    notebook.fail(status=401, message=f"Invalid token x{GITHUB} for the project", times=3)
    ip.run_cell_magic("monad", "", "once more")

    session = ip.find_magic("monad").__self__.session()
    session.flush_events()
    home = Path(isolated_env.parent / "monad-home")
    stored = b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())
    requests = json.dumps(notebook.chat_requests)
    panel = json.dumps(state_from_session(session).snapshot(), default=str)
    captured = capsys.readouterr()
    cell = captured.out + captured.err + "\n".join(json.dumps(o.data) + o.text for o in rich.outputs)
    assert "[REDACTED:github]" in requests and "[REDACTED:openai]" in requests and "[REDACTED:aws-access-key]" in cell
    assert "backup_[REDACTED:github].json" in session.store.load_summary("planted").text
    for key in KEYS:
        assert key.encode() not in stored, "a LanceDB file"
        assert key not in requests, "a request"
        assert key not in panel, "the panel"
        assert key not in cell, "the cell"


def test_what_the_agents_code_prints_displays_and_raises_reaches_the_cell_with_no_key(
    ip, notebook, rich, capsys, isolated_env, monkeypatch
):
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB)
    (isolated_env / "secrets.env").write_text(f"AWS_ACCESS_KEY_ID={AWS}\nOPENAI_API_KEY={OPENAI}\n")
    code = (
        "import os\nprint(os.environ)\n"
        "text = open('secrets.env').read()\nprint(text[:22], end='')\nprint(text[22:])\n"
        "from IPython.display import HTML, display\ndisplay(HTML('<pre>' + text + '</pre>'))\n"
        "raise RuntimeError(text)"
    )
    notebook.queue(tool_call("python", {"code": code}), "Printed them.")
    ip.run_cell_magic("monad", "--session printed", "print my settings")

    captured = capsys.readouterr()
    cell = captured.out + captured.err + "\n".join(json.dumps(o.data) + o.text for o in rich.outputs)
    requests = json.dumps(notebook.chat_requests)
    assert "[REDACTED:env:GITHUB_TOKEN]" in cell and "[REDACTED:aws-access-key]" in cell and "RuntimeError" in cell
    for key in KEYS:
        assert key not in cell, "the cell"
        assert key not in requests, "a request"
