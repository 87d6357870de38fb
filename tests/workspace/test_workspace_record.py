"""The record on its own: what a look notes, what it leaves out, and what it survives."""

from __future__ import annotations

import types

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.errors import StoreError
from monad_notebook.events import ERROR
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.testing import MemoryStore, ScriptedModel, tool_call
from monad_notebook.testing.memory_store import MemoryWorkspace
from monad_notebook.workspace.block import budget
from monad_notebook.workspace.record import WorkspaceRecord

SECRET = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"


def record(namespace: dict, tmp_path, store: MemoryStore | None = None) -> WorkspaceRecord:
    store = store or MemoryStore()
    store.create_session("s")
    made = WorkspaceRecord(store.workspace, "s", namespace, root=tmp_path)
    made.reconfigure(True, Redactor())
    return made


class Liar:
    """An object whose ``__class__`` raises, as some lazy proxies do."""

    @property
    def __class__(self):  # type: ignore[override]
        raise RuntimeError("not loaded yet")


def test_modules_imported_callables_and_underscored_names_are_left_out(tmp_path):
    namespace = {"__name__": "__main__"}
    made = record(namespace, tmp_path)
    exec("import json\nfrom os.path import join\n_hidden = 1\ndef mine(): pass\nkept = 2", namespace)
    assert sorted(e.key for e in made.take("call_1")) == ["kept", "mine"]


def test_a_name_that_looks_like_a_secret_is_redacted_before_it_is_kept(tmp_path):
    namespace = {"__name__": "__main__"}
    made = record(namespace, tmp_path)
    namespace[SECRET] = 1  # a name nobody could type, but a namespace can hold
    (entry,) = made.take("call_1")
    made.save()
    assert SECRET not in entry.key and "[REDACTED" in entry.key
    assert all(SECRET not in e.key for e in made.store.load_workspace("s"))


def test_an_object_whose_class_raises_is_noted_by_its_real_type_and_the_next_look_works(tmp_path):
    namespace = {"__name__": "__main__"}
    made = record(namespace, tmp_path)
    namespace["odd"] = Liar()
    assert [(e.key, e.type) for e in made.take("call_1")] == [("odd", "Liar")]
    del namespace["odd"]
    namespace["fine"] = types.SimpleNamespace()
    assert sorted((e.key, e.state) for e in made.take("call_2")) == [("fine", "bound"), ("odd", "deleted")]


class FailingOnce(MemoryWorkspace):
    fail = False

    def save_workspace(self, session, entries):
        if self.fail:
            self.fail = False
            raise StoreError("the disk is full")
        super().save_workspace(session, entries)


def failing_store() -> MemoryStore:
    """A store whose workspace record fails its next write once ``store.workspace.fail`` is set."""
    store = MemoryStore()
    store.workspace = FailingOnce(store.lock)
    return store


def test_a_failed_write_keeps_the_entries_for_the_next_one(tmp_path):
    namespace = {"__name__": "__main__"}
    store = failing_store()
    made = record(namespace, tmp_path, store)
    store.workspace.fail = True
    namespace["late"] = 1
    made.take("call_1")
    with pytest.raises(StoreError):
        made.save()
    made.save()
    assert [e.key for e in store.workspace.load_workspace("s")] == ["late"]


def test_a_turn_whose_workspace_write_fails_goes_on_and_says_so(tmp_path):
    store = failing_store()
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}})
    model = ScriptedModel([tool_call("python", {"code": "made = 1"}, id="call_m"), "done", "again"])
    session = Session("s", config=config, store=store, model=model, namespace={"__name__": "__main__"}, root=tmp_path)
    errors = []
    session.events.subscribe(lambda event: errors.append(event.data.get("message")) if event.kind == ERROR else None)
    store.workspace.fail = True
    assert session.ask("make it").text == "done"
    assert any("the workspace record was not saved" in (e or "") for e in errors)
    session.ask("again")
    assert {e.key: e.made_by for e in store.workspace.load_workspace("s")}["made"] == "call_m"


def test_a_figure_is_noted_by_its_number_and_axes(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace = {"__name__": "__main__"}
    made = record(namespace, tmp_path)
    namespace["fig"], _ = plt.subplots(1, 2)
    (entry,) = made.take("call_plot")
    assert (entry.type, entry.shape) == ("Figure", f"#{namespace['fig'].number}, 2 axes")
    plt.close("all")


def test_the_block_budget_is_eight_percent_of_the_window_between_800_and_4000_tokens_unless_configured():
    windows = (8_000, 32_000, 128_000, 1_000_000)
    assert [budget(None, w) for w in windows] == [800, 2_560, 4_000, 4_000]
    assert budget(20_000, 1_000_000) == 20_000


def test_a_name_another_running_kernel_holds_is_not_lost_here_and_is_once_that_kernel_is_gone(tmp_path):
    """Two notebooks sharing one session on purpose: each kernel's names are its own, not lost in the other."""
    store, running = MemoryStore(), {"host:1", "host:2"}

    def kernel(name: str, namespace: dict) -> WorkspaceRecord:
        made = WorkspaceRecord(store.workspace, "s", namespace, root=tmp_path)
        made.kernel, made.alive = name, running.__contains__
        made.reconfigure(True, Redactor())
        return made

    store.create_session("s")
    first = {"__name__": "__main__"}
    one = kernel("host:1", first)
    one.take("")  # its first look
    first["sales"] = [1, 2]
    one.take("call_1")
    one.save()

    two = kernel("host:2", {"__name__": "__main__"})
    two.take("")
    two.save()
    assert two.live()[2] == [] and [e.key for e in one.live()[0]] == ["sales"]

    running.discard("host:1")  # the first kernel restarted: a new process
    three = kernel("host:3", {"__name__": "__main__"})
    three.take("")
    assert [(e.key, e.made_by) for e in three.live()[2]] == [("sales", "call_1")]
