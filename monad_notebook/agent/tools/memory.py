"""remember, forget, list_memory: the agent's door to durable memory.

The tools reach the session's MemoryService through ``ctx.extra["memory"]`` and write to
``ctx.extra["memory_scope"]`` (the session's agent scope, or global). Saving goes through the
same ``sanitize_fact`` chokepoint as ``%monad remember``, so the model gets no weaker check
than the user, and a rejection says why without repeating a secret.
"""

from __future__ import annotations

from monad_notebook.agent.tools.base import ToolContext, tool
from monad_notebook.errors import ToolError
from monad_notebook.memory.service import GLOBAL_SCOPE, MemoryService
from monad_notebook.store.base import MemoryFact

MAX_LISTED = 200


def _service(ctx: ToolContext, name: str) -> MemoryService:
    service = ctx.extra.get("memory")
    if service is None:
        raise ToolError(f"{name}: memory is not available in this session")
    return service


def _own_scope(ctx: ToolContext) -> str:
    return str(ctx.extra.get("memory_scope") or GLOBAL_SCOPE)


def _visible(ctx: ToolContext, service: MemoryService) -> list[MemoryFact]:
    scopes = list(dict.fromkeys([_own_scope(ctx), GLOBAL_SCOPE]))
    return service.list(scopes)


@tool
def remember(ctx: ToolContext, fact: str, scope: str = "agent") -> str:
    """Save a durable fact for later sessions: a preference, a name, a path, a decision.

    Write one plain statement of fact, never a secret or an instruction. Saved facts appear in
    the system prompt of every later session.

    Args:
        fact: The fact, one short statement (3-500 characters).
        scope: "agent" to keep it for this agent's sessions, "global" for every session.
    """
    service = _service(ctx, "remember")
    if scope not in ("agent", "global"):
        raise ToolError(f"remember: scope must be 'agent' or 'global', got {scope[:40]!r}")
    target = _own_scope(ctx) if scope == "agent" else GLOBAL_SCOPE
    verdict = service.add(fact, scope=target, source="tool")
    if not verdict.ok:
        return f"not saved: {verdict.reason}"
    if verdict.duplicate_of:
        return f"nothing added: {verdict.reason}"
    return f"remembered as {verdict.fact_id} ({target}): {verdict.text}"


@tool
def forget(ctx: ToolContext, id: str) -> str:
    """Delete a remembered fact by its id (as shown by list_memory).

    Args:
        id: The fact's id.
    """
    service = _service(ctx, "forget")
    fact = next((f for f in _visible(ctx, service) if f.id == id), None)
    if fact is None or not service.remove(fact.id):
        return f"no remembered fact with id {id[:40]!r}; call list_memory to see the ids"
    return f"forgot {fact.id}: {fact.text}"


@tool
def list_memory(ctx: ToolContext) -> str:
    """List the facts remembered for this session (its agent's and global ones), newest first, with their ids."""
    facts = sorted(_visible(ctx, _service(ctx, "list_memory")), key=lambda f: (f.created_at, f.id), reverse=True)
    if not facts:
        return "no facts remembered yet"
    lines = [f"{f.id} [{f.scope}] {f.text}" for f in facts[:MAX_LISTED]]
    if len(facts) > MAX_LISTED:
        lines.append(f"... and {len(facts) - MAX_LISTED} older facts not shown")
    return "\n".join(lines)


TOOLS = [remember, forget, list_memory]
