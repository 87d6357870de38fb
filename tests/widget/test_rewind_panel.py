"""Rewinding from the panel's timeline: the magic, a real session on LanceDB, IPython's in-process shell, and the
panel's comm as the browser would use it. A click does what ``%monad rewind`` does, and the panel follows the
session the conversation goes on in."""

from __future__ import annotations

import pytest

from monad_notebook.magics import MonadMagics
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.jupyter import write_agents

CODE = "x = 42\nwith open('made.txt', 'w') as f:\n    f.write('made by turn 1')"


@pytest.fixture
def magics(ip, isolated_env, comms, monkeypatch):
    with FakeOpenAIServer() as server:
        write_agents(isolated_env, server.base_url, python={"approval": "auto"})
        ip.run_line_magic("reload_ext", "monad_notebook")
        monkeypatch.setattr(MonadMagics, "rich", property(lambda self: True))  # a notebook: the panel is a widget
        magics = ip.find_magic("monad").__self__
        server.queue(tool_call("python", {"code": CODE}), "Made it.")
        ip.user_ns["x"] = 41
        ip.run_cell_magic("monad", "--session nb", "make the file")
        yield magics


def test_a_confirmed_click_rewinds_the_files_and_names_and_the_panel_follows_the_copy(ip, magics, isolated_env):
    panel = ip.run_line_magic("monad", "panel")
    assert panel.rewind == {"turns": 1, "undo": {}}
    assert (isolated_env / "made.txt").exists() and ip.user_ns["x"] == 42

    panel.comm.from_frontend({"type": "rewind", "turn": 1})

    assert ip.user_ns["x"] == 41 and not (isolated_env / "made.txt").exists()
    assert [p.name for p in (isolated_env / ".monad-rewind").glob("*/made.txt")] == ["made.txt"]  # moved aside
    assert panel.session_name == magics.current == "nb@turn1"
    result = panel.rewind["result"]
    assert result["ok"] and not result["undo"]
    assert result["lines"][0].startswith("rewound to before turn 1: the conversation goes on as session 'nb@turn1'")
    assert (panel.rewind["turns"], panel.rewind["undo"]) == (0, {"from": "nb", "turn": 1})

    panel.comm.from_frontend({"type": "rewind", "undo": True})

    assert ip.user_ns["x"] == 42 and (isolated_env / "made.txt").read_text() == "made by turn 1"
    assert panel.session_name == magics.current == "nb"
    assert panel.rewind["result"]["ok"] and panel.rewind["result"]["undo"]
    assert panel.rewind["result"]["lines"][0].startswith("back in session 'nb' with every turn")
    assert (panel.rewind["turns"], panel.rewind["undo"]) == (1, {})


def test_a_click_that_cannot_rewind_says_why_in_the_panel_and_changes_nothing(ip, magics):
    panel = ip.run_line_magic("monad", "panel")
    ip.run_line_magic("monad", "session other")

    panel.comm.from_frontend({"type": "rewind", "turn": 5})
    panel.comm.from_frontend({"type": "rewind", "undo": True})

    assert panel.rewind["result"] == {
        "id": "w2",
        "ok": False,
        "undo": True,
        "lines": ["no rewind to undo: this session is not what a rewind left (%monad rewind TURN rewinds)"],
    }
    assert magics.current == "other" and panel.session_name == "nb" and ip.user_ns["x"] == 42


def test_the_magics_rewind_moves_the_open_panel_too(ip, magics, capsys):
    panel = ip.run_line_magic("monad", "panel")

    ip.run_line_magic("monad", "rewind 1")

    assert "rewound to before turn 1" in capsys.readouterr().out
    assert panel.session_name == "nb@turn1" and panel.rewind["undo"] == {"from": "nb", "turn": 1}
    assert "result" not in panel.rewind  # said in the cell that asked
