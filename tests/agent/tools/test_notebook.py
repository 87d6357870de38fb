"""notebook_history against cells really run in IPython's in-process shell."""

from __future__ import annotations

from monad_notebook import Session
from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.notebook import notebook_history
from monad_notebook.config import Config
from monad_notebook.testing import ScriptedModel, tool_call
from tests.conversation import conversation


def test_history_shows_the_last_cells_with_their_displayed_values(ip, tmp_path, capsys):
    ip.run_cell("nb_rows = [3, 1, 2]", store_history=True)
    ip.run_cell("print('printed, not kept')\nsorted(nb_rows)", store_history=True)
    ip.run_cell("nb_total = sum(nb_rows)\nnb_total * 10", store_history=True)
    capsys.readouterr()
    ctx = ToolContext(session="t", namespace=ip.user_ns, root=tmp_path, shell=ip)
    out = notebook_history.run(ctx, {"n": 2})
    first, second = ip.execution_count - 2, ip.execution_count - 1
    assert out.startswith(f"In [{first}]:\nprint('printed, not kept')\nsorted(nb_rows)\nOut[{first}]:\n[1, 2, 3]")
    assert f"In [{second}]:\nnb_total = sum(nb_rows)\nnb_total * 10\nOut[{second}]:\n60" in out
    assert "nb_rows = [3, 1, 2]" not in out


def test_history_bounds_each_cell(ip, tmp_path, capsys):
    ip.run_cell("nb_long = 'z' * 100_000\nnb_long", store_history=True)
    capsys.readouterr()
    ctx = ToolContext(session="t", namespace=ip.user_ns, root=tmp_path, shell=ip)
    out = notebook_history.run(ctx, {"n": 1})
    assert "characters not shown" in out and len(out) < 3000


def test_history_without_a_kernel_says_so(tmp_path):
    ctx = ToolContext(session="t", namespace={}, root=tmp_path)
    assert "not running inside an IPython kernel" in notebook_history.run(ctx, {})


def test_history_redacts_each_cell_whole_before_clipping_so_no_piece_of_a_secret_reaches_the_model(ip, store, capsys):
    token, password = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d", "Zk29fQp7Lm"
    code = "#" * (1500 - 20 - len("nb_token = '") - 1) + f"\nnb_token = '{token}'\n" + "#" * 4000
    url = f"postgresql://analyst:{password}@db.internal:5432/sales"
    ip.run_cell(code, store_history=True)
    ip.run_cell(f"' ' * {750 - 1 - len('postgresql://analyst:') - 5} + {url!r} + '.' * 2000", store_history=True)
    capsys.readouterr()
    model = ScriptedModel([tool_call("notebook_history", {"n": 2}), "done"])
    session = Session("nb", config=Config(), store=store, model=model, shell=ip)
    session.ask("what did I run?")
    sent = conversation(model.calls[1].messages)[-1]["content"]
    stored = "\n".join(m.content for m in store.load_messages("nb"))
    for text in (sent, stored):
        assert not [p for p in (token[i : i + 8] for i in range(len(token) - 7)) if p in text]
        assert password[:5] not in text
    assert "[REDACTED:github]" in sent and "[REDACTED:url-password]" in sent
    assert sent.count("[REDAC") == sent.count("[REDACTED:github]") + sent.count("[REDACTED:url-password]")  # none cut
