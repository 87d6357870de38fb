"""notebook_history against cells really run in IPython's in-process shell."""

from __future__ import annotations

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.notebook import notebook_history


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
