"""The workspace record in a real session on a real IPython shell and real LanceDB: what the model received.

Each test runs the agent's code through the python tool in IPython's in-process shell (the
``ip`` fixture), and user cells through ``run_cell`` with their ``post_run_cell`` event, then
reads the requests the scripted model received and the rows LanceDB kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook.cell.status import status_sentences
from monad_notebook.config import Config
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call
from monad_notebook.widget.report import workspace_of as panel_rows

pytestmark = pytest.mark.lance

BRIEFING = (
    "## Objective\nexplore the data\n## Decisions & Facts\n- some work was done\n## Files & State\n## Open Tasks\n"
    "- go on\n## Next Step\ncontinue"
)
SECRET = "sk-proj-Zq8vN2mK7xR4tL9wB3cF6hJ1dS5gA0pY"


def make(
    store: LanceStore, shell: Any, model: ScriptedModel, fast: ScriptedModel | None = None, **context: Any
) -> Session:
    config = Config.model_validate(
        {"tools": {"python": {"approval": "auto"}}, "context": {"summarize": {"keepRecent": 2}, **context}}
    )
    fast = fast or ScriptedModel([])
    session = Session("ws", config=config, store=store, model=model, shell=shell, fast_model=fast)
    shell.events.register("post_run_cell", session.workspace.after_cell)
    return session


def unhook(shell: Any, session: Session) -> None:
    shell.events.unregister("post_run_cell", session.workspace.after_cell)


def workspace_of(messages: list[dict[str, Any]]) -> str:
    """The ``<workspace>`` block the model received in one request ("" when there was none)."""
    found = [m["content"] for m in messages if isinstance(m.get("content"), str) and "<workspace>" in m["content"]]
    assert len(found) <= 1
    return found[0][found[0].index("<workspace>") :] if found else ""


def python(code: str, call_id: str) -> Any:
    return tool_call("python", {"code": code}, id=call_id)


def test_names_and_columns_survive_six_compactions_by_a_summarizer_that_keeps_none(store, shell):
    model = ScriptedModel([], context_window=16_000)
    session = make(store, shell, model, ScriptedModel([BRIEFING] * 40))
    columns = {f"df_part{i}": [f"region_{i}", f"revenue_{i}", f"units_{i}"] for i in range(6)}
    for i, (name, cols) in enumerate(columns.items()):
        frame = "{" + ", ".join(f"'{c}': [1, 2]" for c in cols) + "}"
        model.queue(python(f"import pandas as pd\n{name} = pd.DataFrame({frame})", f"call_make{i}"), f"made {name}")
        session.ask(f"make frame {i}")
        assert session.compact()
    model.queue("done")
    session.ask("what do we have?")

    final = model.calls[-1].messages
    folded = {f"call_make{i}" for i in range(5)}  # the last one's result is among the recent messages kept
    assert not any(m.get("tool_call_id") in folded for m in final)
    assert "some work was done" in str(final)
    block = workspace_of(final)
    for i, (name, cols) in enumerate(columns.items()):
        assert re.search(
            rf"- {name}: DataFrame 2 rows x 3 cols \[{', '.join(cols)}\] \(call_make{i}, turn {i + 1}\)", block
        )
    unhook(shell, session)


def test_a_deleted_name_leaves_the_block_and_a_frame_value_is_never_sent(store, shell):
    model = ScriptedModel([python("import pandas as pd\nsecret_frame = pd.DataFrame({'v': [9182 * 100003]})\nkeep = 1",
                                  "call_a"), "made", "next"])  # fmt: skip
    session = make(store, shell, model)
    session.ask("make them")
    assert "- secret_frame: DataFrame 1 rows x 1 cols [v] (call_a, turn 1)" in workspace_of(model.calls[1].messages)
    shell.run_cell("del secret_frame", store_history=True)
    session.ask("and now?")

    block = workspace_of(model.calls[-1].messages)
    assert "secret_frame" not in block and "- keep: int (call_a, turn 1)" in block
    assert not any("918227546" in str(m) for call in model.calls for m in call.messages)  # the value, computed
    stored = {e.key: e for e in store.load_workspace("ws")}
    assert stored["secret_frame"].state == "deleted" and stored["secret_frame"].made_by.startswith("cell ")
    unhook(shell, session)


def test_a_user_cell_is_named_by_its_number_and_a_secret_value_shows_the_name_only(store, shell):
    model = ScriptedModel(["hello", "ok"])
    session = make(store, shell, model)
    session.ask("hi")
    result = shell.run_cell(f"api_token = {SECRET!r}", store_history=True)
    session.ask("what changed?")

    block = workspace_of(model.calls[-1].messages)
    assert f"- api_token: str len {len(SECRET)} (cell {result.execution_count}, turn 1)" in block
    assert not any(SECRET in str(m) for call in model.calls for m in call.messages)
    rows = store.tables.read("workspace", "key = 'api_token'")
    assert rows and all(SECRET not in str(row) for row in rows)
    unhook(shell, session)


def test_a_file_written_by_to_parquet_is_found_with_the_call_that_wrote_it(store, shell, isolated_env):
    code = "import pandas as pd\npd.DataFrame({'a': [1]}).to_parquet('out/sales.parquet')"
    (isolated_env / "out").mkdir()
    model = ScriptedModel([python(code, "call_pq"), "written", "ok"])
    session = make(store, shell, model)
    session.ask("write it")
    session.ask("and?")
    block = workspace_of(model.calls[-1].messages)
    assert re.search(r"- out/sales\.parquet: [\d,]+ bytes \(call_pq, turn 1\)", block)
    unhook(shell, session)


def test_a_notebook_the_frontend_saves_is_not_a_file_the_session_made(store, shell, isolated_env):
    model = ScriptedModel([python("open('notes.txt', 'w').write('x')", "call_n"), "written", "ok"])
    session = make(store, shell, model)
    session.ask("write it")
    (isolated_env / "analysis.ipynb").write_text("{}")  # the frontend's autosave between turns
    session.ask("and?")
    block = workspace_of(model.calls[-1].messages)
    assert "- notes.txt:" in block and "analysis.ipynb" not in block
    unhook(shell, session)


def test_a_restart_lists_what_the_kernel_lost_with_the_call_that_made_each(store, shell, tmp_path):
    model = ScriptedModel([python("import numpy as np\nweights = np.zeros((3, 4))", "call_w"), "made"])
    first = make(store, shell, model)
    first.ask("make weights")
    unhook(shell, first)
    del shell.user_ns["weights"]  # the kernel restarted: the new one holds none of it
    first.close()

    again = ScriptedModel(["I will rerun call_w"])
    second = make(LanceStore(store.tables.uri), shell, again)
    second.ask("go on")
    block = workspace_of(again.calls[0].messages)
    lost = block[block.index("Not in the kernel now") :]
    assert "- weights: ndarray shape (3, 4) float64 (call_w, turn 1)" in lost
    said = status_sentences(second.status(), approval="auto", allowed_for_session=False)
    assert "Not in the kernel now (lost in a restart, rerun what made them): weights (made by call_w, turn 1)" in said
    unhook(shell, second)


def test_after_a_restart_the_id_a_lost_name_gives_shows_the_code_to_rerun(store, shell):
    code = "import numpy as np\nweights = np.zeros((3, 4))"
    model = ScriptedModel([python(code, "call_w"), "made"])
    first = make(store, shell, model, ScriptedModel([BRIEFING] * 3))
    first.ask("make weights")
    for turn in range(3):
        model.queue(python(f"step = {turn}", f"call_s{turn}"), "ok")
        first.ask(f"step {turn}")
        assert first.compact()
    unhook(shell, first)
    del shell.user_ns["weights"]
    first.close()

    again = ScriptedModel([tool_call("read_tool_output", {"id": "call_w"}, id="call_r"), "rerunning it"])
    second = make(LanceStore(store.tables.uri), shell, again)
    second.ask("go on")
    sent = again.calls[0].messages
    assert "read_tool_output shows its code" in workspace_of(sent) and code not in str(sent)  # folded away
    shown = next(m["content"] for m in again.calls[1].messages if m.get("tool_call_id") == "call_r")
    assert shown.startswith(f'[call id="call_w": python, turn 1]\n{code}\n[end of call]\n')
    unhook(shell, second)


def test_ten_thousand_names_stay_within_the_budget_and_are_counted(store, shell):
    for i in range(10_000):
        shell.user_ns[f"v{i:05}"] = i
    model = ScriptedModel(["ok"])
    session = make(store, shell, model, workspace={"maxTokens": 900})
    session.ask("how many?")
    block = workspace_of(model.calls[0].messages)
    assert session.cascade.meter.counter.count_text(block) <= 900
    shown = block.count("\n- v")
    assert shown > 10 and re.search(
        rf"\({10_000 - shown:,} more names and 0 more files not shown: list_variables", block
    )
    part = [p for p in session.prompt_records[-1]["parts"] if p["kind"] == "workspace"]
    assert len(part) == 1 and part[0]["tokens"] > 0  # counted in the occupancy, as its own part
    unhook(shell, session)


def test_list_variables_names_the_call_that_made_each_variable(store, shell):
    model = ScriptedModel([python("threshold = 0.5", "call_t"), tool_call("list_variables", {}, id="call_l"), "ok"])
    session = make(store, shell, model)
    session.ask("set it and list")
    listing = next(m["content"] for m in model.calls[-1].messages if m.get("tool_call_id") == "call_l")
    assert "threshold: float  0.5  [made by call_t, turn 1]" in listing
    unhook(shell, session)


def test_without_read_tool_output_the_block_does_not_point_at_it(store, shell):
    model = ScriptedModel([python("rate = 0.2", "call_r"), "ok"])
    session = make(store, shell, model, toolOutput={"persistRaw": False})
    session.ask("go")
    block = workspace_of(model.calls[-1].messages)
    assert "(its id) or the user's cell" in block and "read_tool_output" not in block
    assert "read_tool_output" not in [t["function"]["name"] for t in model.calls[-1].tools]
    unhook(shell, session)


def test_turned_off_no_block_is_sent_and_nothing_is_recorded(store, shell):
    model = ScriptedModel([python("quiet = 1", "call_q"), "ok"])
    session = make(store, shell, model, workspace={"enabled": False})
    session.ask("go")
    assert all(workspace_of(call.messages) == "" for call in model.calls)
    assert store.load_workspace("ws") == []
    unhook(shell, session)


def test_reset_starts_the_record_over_and_a_branch_keeps_it(store, shell):
    model = ScriptedModel([python("table = [1, 2, 3]", "call_tb"), "made"])
    session = make(store, shell, model)
    session.ask("make it")
    session.branch("copy")
    session.reset()
    assert {e.key: e.made_by for e in store.load_workspace("copy")}["table"] == "call_tb"
    assert {e.key: e.made_by for e in store.load_workspace("ws")}["table"] == ""  # there before the session now
    unhook(shell, session)


def test_the_extension_notes_the_users_cells_and_status_tells_the_record(ip, shell, isolated_env, capsys):
    with FakeOpenAIServer() as server:
        config = {"models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 1}}}
        (isolated_env / "agents.json").write_text(json.dumps(config))
        ip.run_line_magic("reload_ext", "monad_notebook")
        server.queue("hi", "ok")
        ip.run_cell_magic("monad", "--session wsmagic", "hello")
        result = ip.run_cell("ws_cell_list = [1, 2, 3]", store_history=True)
        ip.run_cell_magic("monad", "--session wsmagic", "what now?")
        block = workspace_of(server.chat_requests[-1]["messages"])
        assert f"- ws_cell_list: list len 3 (cell {result.execution_count}, turn 1)" in block
        capsys.readouterr()
        ip.run_line_magic("monad", "status")
        out = capsys.readouterr().out
        assert "the workspace record follows" in out, out
        magics = ip.magics_manager.registry["MonadMagics"]
        ip.run_line_magic("unload_ext", "monad_notebook")
        assert magics.after_cell not in ip.events.callbacks["post_run_cell"]
        ip.run_line_magic("load_ext", "monad_notebook")


GITHUB = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
OPENAI = "sk-proj-" + "T4kW9qZ2vB7xR1mN8pL3sD6f" * 2


def test_a_key_in_a_type_a_dtype_field_or_a_column_reaches_no_request_no_stored_row_and_no_panel_row(store, shell):
    model = ScriptedModel(["hello", tool_call("list_variables", {}), tool_call("describe", {"name": "fields"}), "ok"])
    session = make(store, shell, model)
    session.ask("hi")
    shell.run_cell(
        "import numpy as np, pandas as pd\n"
        f"gh, oa = {GITHUB[:20]!r} + {GITHUB[20:]!r}, {OPENAI[:20]!r} + {OPENAI[20:]!r}\n"
        "fields = np.zeros(2, dtype=[(gh, '<f8')])\n"
        "made = type('backup_' + gh, (), {})()\n"
        "frame = pd.DataFrame({'openai_' + oa: [1]})\n"
        "named = pd.Series([1.0], name='col_' + gh)\n",
        store_history=True,
    )
    session.ask("what changed?")

    block = workspace_of(model.calls[-1].messages)
    assert "- fields: ndarray shape (2,) [('[REDACTED:github]', '<f8')]" in block
    assert "- made: backup_[REDACTED:github]" in block and "[openai_[REDACTED:openai]]" in block
    sent = json.dumps([call.messages for call in model.calls])
    rows = json.dumps(panel_rows(session))
    stored = b"".join(p.read_bytes() for p in Path(store.uri).rglob("*") if p.is_file() and "workspace" in str(p))
    for key in (GITHUB, OPENAI):
        assert key not in sent and key not in rows and key.encode() not in stored
    unhook(shell, session)
