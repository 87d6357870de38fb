"""``%monad status`` as sentences, and the figures of a cell's footer, each number with its unit.

The window figure is one whole prompt (what the next request will cost); the footer's "sent"
figure adds up every request of the turn. Both say whether the provider counted them or they
are estimates, so the two are never read as the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_notebook.cell.html import Footer
from monad_notebook.notebook.document import saved_path
from monad_notebook.notebook.frontend import EXTENSION

if TYPE_CHECKING:
    from monad_notebook.agent.loop import Reply
    from monad_notebook.notebook.frontend import NotebookFrontend
    from monad_notebook.session import Session

KNOWN = {
    "text_calls",
    "mcp_servers",
    "images",
    "session",
    "model",
    "config",
    "stored_messages",
    "window_messages",
    "summary",
    "unindexed",
    "unsearchable",
    "index_eta_seconds",
    "recall_checking",
    "occupancy",
    "context_window",
    "fraction",
    "exact",
    "reclaimed",
    "messages",
    "workspace_names",
    "workspace_files",
    "workspace_lost",
    "workspace_unseen",
}


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def notebook_sentence(notebook: NotebookFrontend | None) -> str:
    """Which notebook path is active (the extension at the cells, the cell's output, or none), for ``%monad status``."""
    if notebook is None:
        return (
            "No notebook is open to this session (a script, nbclient or papermill): the notebook tools "
            "(read_notebook, insert_cell, ...) are not offered."
        )
    approval = notebook.approval
    if approval == "off":
        return 'The notebook tools are off (tools.notebook.approval is "off").'
    applies = (
        "applies its changes at once and shows each as a diff"
        if approval == "auto"
        else "proposes changes that wait as diffs until you accept or reject them"
    )
    if notebook.path() == EXTENSION:
        where = notebook.about.get("path") or "the notebook"
        app = notebook.about.get("app") or "JupyterLab"
        return (
            f"The agent reads {where} as open in {app} (unsaved edits included) and {applies} at the cell "
            f'(tools.notebook.approval is "{approval}").'
        )
    saved = saved_path(getattr(notebook.shell, "user_ns", {}), Path.cwd())
    named = f"the saved {saved.name}" if saved is not None else "no notebook file (this frontend does not name it)"
    return (
        f"This frontend has no monad-notebook extension: the agent reads {named} and {applies} in the "
        "%%monad cell's output; an accepted new code cell is inserted below it when the turn ends (one per "
        f'turn), other accepted changes are shown as code to copy (tools.notebook.approval is "{approval}").'
    )


def workspace_sentence(status: dict[str, Any]) -> str:
    """What the workspace record holds, and what the kernel no longer holds (after a restart), with what made it."""
    if status.get("workspace_names") is None:
        return "The workspace record is off (context.workspace.enabled is false)."
    names, files = int(status.get("workspace_names") or 0), int(status.get("workspace_files") or 0)
    held = f"The kernel holds {_plural(names, 'name')} the workspace record follows; {_plural(files, 'file')} written."
    unseen = str(status.get("workspace_unseen") or "")
    held = f"{held} {unseen}" if unseen else held
    lost = status.get("workspace_lost") or []
    if not lost:
        return held
    listed = "; ".join(f"{key} (made by {made_by or 'an earlier kernel'}, turn {turn})" for key, made_by, turn in lost)
    return f"{held} Not in the kernel now (lost in a restart, rerun what made them): {listed}."


def python_sentence(approval: str, allowed_for_session: bool) -> str:
    if approval == "auto":
        return 'Python code the agent writes runs without asking (tools.python.approval is "auto").'
    if approval == "off":
        return 'The python tool is turned off (tools.python.approval is "off").'
    if allowed_for_session:
        return (
            'Python code runs without asking for the rest of this session: you chose "allow python for this '
            'session". A new session, or %monad reset, asks again.'
        )
    return 'Python code waits for your approval before it runs (tools.python.approval is "ask").'


COST_KEYS = {
    "step_prompt_tokens",
    "step_cached_tokens",
    "tokens_sent",
    "tokens_cached",
    "billed_input",
    "cache_discount",
    "cache_warm",
}


def cost_sentence(status: dict[str, Any]) -> str:
    """What this kernel has sent to the model, and what that is worth at the endpoint's cache price."""
    sent, cached = int(status.get("tokens_sent") or 0), int(status.get("tokens_cached") or 0)
    discount = float(status.get("cache_discount") if status.get("cache_discount") is not None else 1.0)
    if not sent:
        return "Nothing has been sent to the model from this kernel yet."
    if discount >= 1.0:
        return f"This kernel has sent {sent:,} input tokens; this endpoint is not known to discount cached input."
    warm = "warm" if status.get("cache_warm") else "cold"
    return (
        f"This kernel has sent {sent:,} input tokens, {cached:,} of them served from the provider's cache; "
        f"at {discount:g}x for cached input that bills as {int(status.get('billed_input') or 0):,} "
        f"(the cache is {warm} now)."
    )


def indexing_sentences(status: dict[str, Any]) -> list[str]:
    """How far recall's index is behind: messages not searchable yet, messages found by their words only
    while their vectors are made (and about how long that takes), earlier history not yet checked."""
    waiting, unsearchable = int(status.get("unindexed") or 0), int(status.get("unsearchable") or 0)
    lines = []
    if unsearchable:
        lines.append(
            f"Recall cannot search {_plural(unsearchable, 'stored message')} yet: their words are being indexed."
        )
    by_words = waiting - unsearchable
    if by_words > 0:
        eta = float(status.get("index_eta_seconds") or 0.0)
        soon = f"in about {_duration(eta)}" if eta >= 1 else "within a second"
        lines.append(
            f"Recall finds {_plural(by_words, 'message')} by their words only for now: "
            f"their meaning is being indexed in the background, done {soon} at the present pace."
        )
    if status.get("recall_checking"):
        lines.append("Recall is still comparing this session's earlier history with its index.")
    return lines


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def mcp_sentence(server: Any, allowed: bool = False) -> str:
    """One line per MCP server: its state and its tools (or why it has none), and whether it still asks."""
    tools = ", ".join(server.tools) if server.tools else "none"
    if server.state == "ready":
        said = f"MCP server {server.name}: ready, tools {tools}."
        if server.left_out:
            shown = ", ".join(server.left_out[:5]) + (" ..." if len(server.left_out) > 5 else "")
            said += f" Left out (a schema the model cannot be given, or a name taken): {shown}."
        if server.off:
            said += f' Turned off (approval "off", not offered): {", ".join(server.off)}.'
        if allowed:
            said += f' Its calls run without asking for the rest of this session ("allow {server.name}").'
        return said
    detail = f" ({server.detail})" if server.detail else ""
    return f"MCP server {server.name}: {server.state}{detail}."


def text_calls_sentence(written: dict[str, Any]) -> str:
    """Whether tool calls the model writes in its text are run, and how many were ("" when none and on)."""
    mode, run, refused = written.get("mode", "auto"), int(written.get("run") or 0), int(written.get("refused") or 0)
    if mode == "off":
        return 'Tool calls the model writes as text are not run (models.main.textToolCalls is "off").'
    if not (run or refused):
        return ""
    said = f"The model wrote {_plural(run + refused, 'tool call')} as text instead of calling through the API; "
    said += f"{run:,} ran as calls" if run else "none could run"
    if run and refused:
        said += f", {refused:,} could not (an unknown tool or arguments its schema refuses)"
    return said + ' (models.main.textToolCalls is "auto"; such a call that can change anything asks first).'


def images_sentence(detail: str) -> str:
    """How the charts the agent's code displays reach the model ("" detail: they do not)."""
    if detail:
        return (
            f'The charts the agent\'s code displays are sent to the model (detail "{detail}"); '
            "eviction clears old ones first."
        )
    return "The model gets the charts the agent's code displays as one-line descriptions (models.main.vision is off)."


def status_sentences(
    status: dict[str, Any], *, approval: str, allowed_for_session: bool, allowed_servers: set[str] = frozenset()
) -> str:
    """``Session.status()`` told as a few sentences a person reads top to bottom."""
    window = int(status.get("context_window") or 0)
    occupancy = int(status.get("occupancy") or 0)
    share = f"{occupancy / window:.0%}" if window else "?"
    counted = "as counted by the provider for the last request" if status.get("exact") else "estimated"
    lines = [
        f'Session "{status.get("session")}" talks to {status.get("model")}; its configuration comes from '
        f"{status.get('config')}.",
        f"The window holds {occupancy:,} of {window:,} tokens ({share}, {counted}) in "
        f"{_plural(int(status.get('window_messages') or 0), 'message')}.",
        f"The store keeps {_plural(int(status.get('stored_messages') or 0), 'message')} of this session; "
        + (
            "older ones are folded into a rolling summary."
            if status.get("summary")
            else "none has been summarized yet."
        ),
    ]
    lines += indexing_sentences(status)
    reclaimed = int(status.get("reclaimed") or 0)
    if reclaimed:
        lines.append(f"Clearing old tool results has saved {reclaimed:,} tokens; each stays readable by its handle.")
    lines.append(cost_sentence(status))
    if "images" in status:
        lines.append(images_sentence(str(status["images"])))
    if "workspace_names" in status:
        lines.append(workspace_sentence(status))
    lines.append(python_sentence(approval, allowed_for_session))
    written = text_calls_sentence(status.get("text_calls") or {})
    if written:
        lines.append(written)
    lines += [mcp_sentence(server, server.name in allowed_servers) for server in status.get("mcp_servers") or []]
    extra = {k: v for k, v in status.items() if k not in KNOWN and k not in COST_KEYS}
    if extra:
        lines.append("Also: " + ", ".join(f"{k} {v}" for k, v in extra.items()) + ".")
    return "\n".join(lines)


def footer_for(session: Session, reply: Reply) -> Footer:
    usage = session.usage_snapshot()
    try:
        suggestions = len(session.memory.pending_suggestions(session.name))
    except Exception:  # the footer must not fail an answered turn
        suggestions = 0
    return Footer(
        occupancy=int(usage.get("occupancy") or 0),
        context_window=int(usage.get("context_window") or 0),
        exact=bool(usage.get("exact")),
        sent=reply.prompt_tokens,
        sent_estimated=reply.estimated,
        requests=reply.steps,
        tool_calls=reply.tool_calls,
        session=session.name,
        model=session.model.name,
        reclaimed=int(usage.get("reclaimed") or 0),
        suggestions=suggestions,
        truncated=reply.truncated,
        recovered=reply.recovered_calls,
    )
