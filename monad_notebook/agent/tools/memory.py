"""remember, forget, list_memory: the agent's door to durable memory.

The tools reach the session's MemoryService through ``ctx.memory`` and write to
``ctx.memory_scope`` (the session's agent scope). Saving goes through the same
``sanitize_fact`` chokepoint as ``%monad remember``, so the model gets no weaker check than the
user, and a refusal is a one-line tool error that says why without repeating a secret.

Global facts reach every later session of every agent, so the model cannot write them: a
global ``remember`` (or any ``remember`` in a session without an agent) becomes a pending
suggestion that only the user's Save (panel, ``%monad remember --accept N``) turns into a fact.
"""

from __future__ import annotations

from monad_notebook.agent.tools.base import ToolContext, reads, tool
from monad_notebook.errors import ToolError
from monad_notebook.memory.service import GLOBAL_SCOPE, MemoryService, fact_key
from monad_notebook.store.base import MemoryFact

MAX_LISTED = 200


def _service(ctx: ToolContext, name: str) -> MemoryService:
    service = ctx.memory
    if service is None:
        raise ToolError(f"{name}: memory is not available in this session")
    return service


def _own_scope(ctx: ToolContext) -> str:
    return ctx.memory_scope or GLOBAL_SCOPE


def _visible(ctx: ToolContext, service: MemoryService) -> list[MemoryFact]:
    scopes = list(dict.fromkeys([_own_scope(ctx), GLOBAL_SCOPE]))
    return service.list(scopes)


@tool
def remember(ctx: ToolContext, fact: str, scope: str = "agent") -> str:
    """Save a durable fact for later sessions: a preference, a name, a path, a decision.

    Write one plain statement of fact, never a secret or an instruction. Saved facts appear in
    the system prompt of every later session. A global fact waits for the user's Save.

    Args:
        fact: The fact, one short statement (3-500 characters).
        scope: "agent" to keep it for this agent's sessions, "global" to suggest it for every session.
    """
    service = _service(ctx, "remember")
    if scope not in ("agent", "global"):
        raise ToolError(f"remember: scope must be 'agent' or 'global', got {scope[:40]!r}")
    target = _own_scope(ctx) if scope == "agent" else GLOBAL_SCOPE
    verdict = service.sanitize(fact, target)
    if not verdict.ok:
        raise ToolError(f"remember: not saved: {verdict.reason}")
    if verdict.duplicate_of:
        return f"nothing added: {verdict.reason}"
    if target == GLOBAL_SCOPE:
        return _suggest_globally(ctx, service, verdict.text)
    saved = service.add(fact, scope=target, source="tool")
    return f"remembered as {saved.fact_id} ({target}): {saved.text}"


def _suggest_globally(ctx: ToolContext, service: MemoryService, text: str) -> str:
    """Global facts reach every session, so the model only proposes them and the user decides."""
    added = service.suggest(ctx.session, [text], scope=GLOBAL_SCOPE)
    pending = service.pending_suggestions(ctx.session)
    key = fact_key(text)
    number = next((i for i, item in enumerate(pending, 1) if fact_key(item["text"]) == key), 0)
    if not added:
        return f"nothing added: already waiting for the user's Save as suggestion {number}"
    return (
        f"not saved yet: global memory needs the user's Save; suggested as number {number} "
        f"(the panel's Save button or %monad remember --accept {number}): {text}"
    )


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


@reads
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
