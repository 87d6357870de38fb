"""Each notebook owns its session: by the name in its metadata, else by its path (a real store, real files)."""

from __future__ import annotations

import json
import shutil

from monad_notebook.messages import Message
from monad_notebook.notebook.ownership import Identity, listing, own_session, saved_identity


def notebook_file(path, session: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"monad": {"session": session}} if session else {}
    path.write_text(json.dumps({"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))


def opened(path, cwd):
    """What a kernel finds when a frontend names the file (VS Code's variable; JPY_SESSION_NAME reads the same)."""
    return saved_identity({"__vsc_ipynb_file__": str(path)}, cwd)


def test_a_renamed_notebook_keeps_its_session_a_copy_branches_and_a_namesake_elsewhere_gets_its_own(store, tmp_path):
    first = tmp_path / "a" / "analysis.ipynb"
    notebook_file(first)
    owned = own_session(store, opened(first, tmp_path))
    assert owned.name == "analysis" and owned.note == ""
    store.append_messages([Message(role="user", content="load the sales data", session="analysis", seq=0, turn=1)])
    notebook_file(first, "analysis")  # the extension named it in the metadata, and the user saved

    copy = tmp_path / "a" / "analysis-Copy1.ipynb"
    shutil.copy(first, copy)
    branched = own_session(store, opened(copy, tmp_path))
    assert branched.name == "analysis-Copy1"
    assert "is a copy of" in branched.note and "starts as a branch of 'analysis'" in branched.note
    assert [m.content for m in store.load_messages("analysis-Copy1")] == ["load the sales data"]
    assert store.get_session("analysis-Copy1").parent == "analysis"
    again = own_session(store, opened(copy, tmp_path))  # its metadata still names the original: no second branch
    assert again.name == "analysis-Copy1" and len(store.list_sessions()) == 2

    moved = tmp_path / "b" / "renamed.ipynb"
    moved.parent.mkdir()
    first.rename(moved)
    followed = own_session(store, opened(moved, tmp_path))
    assert followed.name == "analysis" and "follows its notebook" in followed.note
    assert [m.content for m in store.load_messages("analysis")] == ["load the sales data"]
    assert str(moved.resolve()) in listing(store, "analysis")

    namesake = tmp_path / "c" / "analysis.ipynb"
    notebook_file(namesake)
    assert own_session(store, opened(namesake, tmp_path)).name == "analysis-2"
    assert own_session(store, opened(moved, tmp_path)).name == "analysis"  # a kernel restart: the same session
    assert own_session(store, Identity()).name == "default"  # no notebook at all: a plain IPython shell


def test_the_shared_default_session_from_before_stays_and_is_pointed_to_once(store, tmp_path):
    store.create_session("default")
    store.append_messages([Message(role="user", content="an old question", session="default", seq=0, turn=1)])
    for name in ("one", "two"):
        notebook_file(tmp_path / f"{name}.ipynb")
    told = own_session(store, opened(tmp_path / "one.ipynb", tmp_path)).note
    assert "this one's is 'one'" in told and "%monad session default returns to it" in told
    assert own_session(store, opened(tmp_path / "two.ipynb", tmp_path)).note == ""
    assert [m.content for m in store.load_messages("default")] == ["an old question"]
    shown = listing(store, None).splitlines()
    assert shown[0].startswith("  default  (1 messages") and "notebook" not in shown[0]
    assert shown[1].startswith("  one  (0 messages") and shown[1].endswith(str((tmp_path / "one.ipynb").resolve()))


def test_unreadable_foreign_or_hand_named_metadata_falls_back_to_the_path(store, tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    odd = tmp_path / "odd.ipynb"
    odd.write_text(json.dumps({"cells": [], "metadata": {"monad": {"session": ["a", "list"]}}}))
    assert opened(broken, tmp_path) == Identity(str(broken.resolve()), "")
    assert own_session(store, opened(broken, tmp_path)).name == "broken"
    assert own_session(store, opened(odd, tmp_path)).name == "odd"
    store.create_session("shared")  # named by hand with --session: no notebook's own
    by_hand = tmp_path / "by_hand.ipynb"
    notebook_file(by_hand, "shared")
    assert own_session(store, opened(by_hand, tmp_path)).name == "by_hand"
    assert store.get_session("shared").meta == {}
