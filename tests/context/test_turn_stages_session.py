"""The per-turn stages inside a real session: once per turn, on the right message, never repeated."""

from __future__ import annotations

import time

import pytest

from monad_notebook import Session
from monad_notebook.config import Config, ConfigWatcher
from monad_notebook.store.base import Summary
from monad_notebook.testing import ScriptedModel, tool_call

BRIEFING = (
    "## Objective\nforecast sales\n## Decisions & Facts\n- use weekly data\n## Files & State\n- data/sales.csv\n"
    "## Open Tasks\n- fit the seasonal model\n## Next Step\nplot residuals of `model_fit`"
)


def make(store, model, name="stages", **context) -> Session:
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}, "context": context})
    return Session(name, config=config, store=store, model=model)


def test_plan_and_memory_appear_once_per_step_call_and_the_plan_comes_last(store):
    store.create_session("stages")
    store.save_summary(Summary(session="stages", text=BRIEFING, boundary_seq=-1, created_at=time.time()))
    steps = [tool_call("list_variables", {}), tool_call("list_variables", {}), "done", "again"]
    model = ScriptedModel(steps, context_window=100_000)
    session = make(store, model, recitation={"enabled": True})
    session.memory.add("Revenue is in euros", scope="global")
    session.ask("continue the forecast")
    session.ask("and now?")
    for call in model.calls:
        contents = [str(m["content"]) for m in call.messages]
        assert sum("<plan>" in c for c in contents) == 1
        assert contents[-1].split("\n\n<plan>\n")[1].endswith("plot residuals of `model_fit`\n</plan>")
        assert "Revenue is in euros" in contents[0]
        assert sum("Revenue is in euros" in c for c in contents) == 1
    assert "<plan>" not in "".join(m.content for m in store.load_messages("stages"))


def test_no_plan_without_a_summary_or_when_recitation_is_off(store):
    model = ScriptedModel(["a", "b"], context_window=100_000)
    make(store, model, name="plain", recitation={"enabled": True}).ask("hi")
    store.save_summary(Summary(session="plain", text=BRIEFING, boundary_seq=-1, created_at=time.time()))
    make(store, model, name="plain").ask("again")
    assert not any("<plan>" in str(m["content"]) for call in model.calls for m in call.messages)


def test_retrieval_brings_back_an_old_fact_once_and_only_from_this_session(store):
    pytest.importorskip("onnxruntime")
    from monad_notebook.provider.local_embedder import LOCAL_DIMS, LOCAL_MODEL_NAME, local_model_files

    if local_model_files() is None:
        pytest.skip("the offline embedder of the local extra is not installed")
    context = {"retrieval": {"enabled": True, "minScore": 0.3}, "summarize": {"keepRecent": 2}}
    other = make(store, ScriptedModel(["noted"]), name="other", **context)
    other.ask("The database password rotation happens every Tuesday at noon.")
    chatter = [f"Topic {i}: the weather report mentions light rain and wind." for i in range(6)]
    model = ScriptedModel(["noted"] + ["ok"] * len(chatter) + ["answer"], context_window=100_000)
    session = make(store, model, name="mine", **context)
    session.ask("Our churn model uses a gradient boosted tree with 300 estimators.")
    for line in chatter:
        session.ask(line)
    assert session.compact()
    session.wait_for_background(30)
    session.ask("How many estimators does the churn classifier have?")
    sent = model.calls[-1].messages
    related = [m["content"] for m in sent if "<related_context>" in str(m["content"])]
    assert len(related) == 1 and sent[-1]["content"] == related[0]
    assert "300 estimators" in related[0]
    assert "Tuesday" not in related[0]
    assert store.embedded_ids("mine", model=LOCAL_MODEL_NAME, dims=LOCAL_DIMS)  # by the offline model


def test_agent_scoped_memory_is_seen_only_by_that_agents_sessions(store):
    def session(name: str, agent: str | None) -> Session:
        config = Config.model_validate({"agent": {"name": agent}} if agent else {})
        return Session(name, config=config, store=store, model=ScriptedModel(["ok"], context_window=100_000))

    analyst = session("a1", "analyst")
    assert analyst.memory.add("Fiscal year starts in April", scope=analyst.memory_scope).saved
    analyst.memory.add("Use UTC timestamps everywhere", scope="global")
    for name, agent, sees_april in (("a2", "analyst", True), ("b1", "teacher", False), ("c1", None, False)):
        other = session(name, agent)
        other.ask("hi")
        system = other.model.calls[0].messages[0]["content"]
        assert ("Fiscal year starts in April" in system) is sees_april
        assert "Use UTC timestamps everywhere" in system


def sticky_session(store, tmp_path, model, clock):
    """A session whose agents.json turns retrieval on, with earlier turns folded out of the window."""
    from tests.test_hot_reload import Agents

    context = {"retrieval": {"enabled": True, "minScore": 0.3}, "summarize": {"keepRecent": 2}}
    agents = Agents(tmp_path, {"tools": {"python": {"approval": "auto"}}, "context": context})
    session = Session("sticky", config=ConfigWatcher(agents.path), store=store, model=model)
    session.cascade.meter.cost.clock = lambda: clock[0]
    session.ask("Our churn model uses a gradient boosted tree with 300 estimators.")
    for i in range(6):
        session.ask(f"Topic {i}: the weather report mentions light rain and wind.")
    assert session.compact()
    session.wait_for_background(30)
    return session, agents


QUESTION = "How many estimators does the churn classifier have?"


def carried(request: list[dict]) -> list[str]:
    """What the message that asked QUESTION carried in ``request``."""
    return [m["content"] for m in request if str(m["content"]).startswith(QUESTION)]


@pytest.mark.parametrize("then", ["the cache goes cold", "retrieval is turned off"])
def test_an_earlier_turns_related_context_stays_on_its_message_until(store, tmp_path, then):
    pytest.importorskip("onnxruntime")
    from monad_notebook.provider.local_embedder import local_model_files

    if local_model_files() is None:
        pytest.skip("the offline embedder of the local extra is not installed")
    model = ScriptedModel(["noted"] + ["ok"] * 6 + ["answer", "sure", "fine"], context_window=100_000)
    clock = [1000.0]
    session, agents = sticky_session(store, tmp_path, model, clock)
    session.ask(QUESTION)
    asked = model.calls[-1].messages
    assert "300 estimators" in asked[-1]["content"]
    clock[0] += 60  # within the provider's cache lifetime (5 minutes for this endpoint)
    session.ask("Thanks, that is all for the tree.")
    warm = model.calls[-1].messages
    assert warm[: len(asked)] == asked  # the next request extends the last one: its whole prefix is cached
    if then == "the cache goes cold":
        clock[0] += 600  # the prompt is resent whole anyway: the old block costs a resend no more
    else:
        clock[0] += 60
        agents.edit({"context": {"retrieval": {"enabled": False}}})
    session.ask("Back to the weather.")
    assert carried(model.calls[-1].messages) == [QUESTION]
    session.close()
