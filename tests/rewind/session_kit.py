"""A session on IPython's in-process shell and real LanceDB whose agent runs scripted python calls."""

from __future__ import annotations

from typing import Any

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_call

BRIEFING = (
    "## Objective\nmake and change names\n## Decisions & Facts\n- done\n## Files & State\n## Open Tasks\n"
    "## Next Step\n-"
)


def make(store: LanceStore, shell: Any, model: ScriptedModel, approval: str = "auto", **rewind: Any) -> Session:
    """A session whose python calls run without asking (by default), its user cells noted as the extension notes
    them, whose summaries keep the last two messages."""
    config = Config.model_validate(
        {"tools": {"python": {"approval": approval}}, "context": {"summarize": {"keepRecent": 2}}, "rewind": rewind}
    )
    fast = ScriptedModel([BRIEFING] * 3)
    session = Session("rw", config=config, store=store, model=model, shell=shell, fast_model=fast)
    shell.events.register("post_run_cell", session.workspace.after_cell)
    return session


def unhook(shell: Any, session: Session) -> None:
    shell.events.unregister("post_run_cell", session.workspace.after_cell)


def python(code: str, call_id: str) -> Any:
    return tool_call("python", {"code": code}, id=call_id)


def result_of(model: ScriptedModel, call_id: str) -> str:
    """The result of one call as the model received it in its next request."""
    for call in model.calls:
        for message in call.messages:
            if message.get("tool_call_id") == call_id:
                return str(message["content"])
    raise AssertionError(f"no result for {call_id} reached the model")
