"""``monad demo`` from the command line: the offline scripted path, and a local model that writes its calls as text."""

from __future__ import annotations

import re

from monad_notebook import cli
from monad_notebook.cli import main
from monad_notebook.testing import FakeOpenAIServer


def where(tmp_path) -> list[str]:
    return ["--db", str(tmp_path / "db"), "--workdir", str(tmp_path / "work")]


def test_the_offline_demo_runs_its_four_turns_on_the_labelled_scripted_model(tmp_path, capsys):
    assert main(["demo", *where(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("monad demo: scripted demo model, no LLM")
    assert [int(n) for n in re.findall(r"^\[turn (\d)\] monad:", out, re.M)] == [1, 2, 3, 4]
    assert "**South** grew fastest last quarter" in out
    assert "| tool calls | 5 |" in out and "| turns | 4 |" in out and "written as text" not in out


def test_the_demo_runs_the_calls_a_local_model_writes_as_text(tmp_path, capsys):
    fenced = '```json\n{"name": "read_file", "arguments": {"path": "data/sales.csv", "offset": 0, "limit": 3}}\n```'
    with FakeOpenAIServer() as server:
        server.queue(fenced, "It holds daily sales by region.", "South.", "Saved.", "We loaded and summarized it.")
        code = main(
            [
                "demo",
                "--base-url",
                server.base_url,
                "--model",
                "qwen2.5-coder-1.5b",
                "--context-window",
                "8192",
                *where(tmp_path),
            ]
        )
    out = capsys.readouterr().out
    assert code == 0 and "monad demo: model qwen2.5-coder-1.5b at http://127.0.0.1:" in out
    assert '-> read_file({"path": "data/sales.csv", "offset": 0, "limit": 3}) (written as text: json block)' in out
    assert "date,region,product,units,revenue" in out  # what the call read
    assert "[turn 1] monad: It holds daily sales by region." in out
    assert "| tool calls | 1 (1 written as text) |" in out


def test_the_servers_context_window_is_the_one_the_session_plans_against(tmp_path, monkeypatch):
    windows: list[int] = []

    class Watched(cli.Session):
        def ask(self, text, **kwargs):
            windows.append(self.context_window)
            return super().ask(text, **kwargs)

    monkeypatch.setattr(cli, "Session", Watched)
    with FakeOpenAIServer() as server:
        server.queue("a", "b", "c", "d")
        main(
            [
                "demo",
                "--base-url",
                server.base_url,
                "--model",
                "qwen2.5-coder-1.5b",
                "--context-window",
                "8192",
                *where(tmp_path),
            ]
        )
    assert windows == [8192] * 4  # the name alone would plan against qwen2.5's 32,768
