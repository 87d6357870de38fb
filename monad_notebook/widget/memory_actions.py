"""The panel's memory clicks: save, dismiss, forget, and an undo that names the fact it undoes.

Each click leaves a receipt ("Saved “…” · Undo") in place of the row it acted on, so nothing
jumps; the suggestions and the facts in force are read back from the memory service after.
"""

from __future__ import annotations

from typing import Any

from monad_notebook.widget.report import facts_of, suggestions_of
from monad_notebook.widget.source import MemoryBox, PanelSource
from monad_notebook.widget.state import PanelState


def _ok(verdict: Any) -> bool:
    return bool(getattr(verdict, "ok", verdict))


class MemoryActions:
    """Carries out one memory click on ``session`` and folds the result into ``state``."""

    def __init__(self, session: PanelSource, state: PanelState, scope: str | None = None) -> None:
        self.session = session
        self.state = state
        self.scope = scope

    @property
    def memory(self) -> MemoryBox | None:
        return self.session.memory

    def refresh(self) -> set[str]:
        """Read the pending suggestions and the facts in force back from the service."""
        changed: set[str] = set()
        suggestions = suggestions_of(self.session)
        if suggestions is not None:
            changed |= self.state.set_suggestions(suggestions)
        facts = facts_of(self.session)
        if facts is not None:
            changed |= self.state.set_facts(facts)
        return changed

    def _targets(self, content: dict[str, Any]) -> list[dict[str, Any]]:
        wanted = None if content.get("all") else {str(content.get("id", ""))}
        return [s for s in self.state.suggestions if wanted is None or s["id"] in wanted]

    def save(self, content: dict[str, Any]) -> set[str]:
        memory = self.memory
        if memory is None:
            return self._no_memory()
        saved: list[tuple[dict[str, Any], Any]] = []
        changed: set[str] = set()
        for item in self._targets(content):
            verdict = memory.accept(self.session.name, item["id"], self.scope)
            if not _ok(verdict):
                reason = getattr(verdict, "reason", "") or "refused"
                changed |= self.state.add_notice("error", f"not saved “{item['text']}”: {reason}")
            else:
                saved.append((item, verdict))
        if len(saved) == 1:
            item, verdict = saved[0]
            fact_id = getattr(verdict, "fact_id", None)
            text = getattr(verdict, "text", "") or item["text"]
            if fact_id:
                changed |= self.state.set_receipt("saved", text, fact_id=fact_id, scope=item.get("scope"), undo=True)
            else:
                changed |= self.state.set_receipt("already", text, undo=False)
        elif saved:
            changed |= self.state.set_receipt("saved", f"{len(saved)} facts", undo=False)
        return changed | self.refresh()

    def dismiss(self, content: dict[str, Any]) -> set[str]:
        memory = self.memory
        if memory is None:
            return self._no_memory()
        items = self._targets(content)
        for item in items:
            memory.dismiss(self.session.name, item["id"])
        changed: set[str] = set()
        if len(items) == 1:
            item = items[0]
            changed = self.state.set_receipt("dismissed", item["text"], scope=item.get("scope"), undo=True)
        elif items:
            changed = self.state.set_receipt("dismissed", f"{len(items)} suggestions", undo=False)
        return changed | self.refresh()

    def forget(self, content: dict[str, Any]) -> set[str]:
        memory = self.memory
        if memory is None:
            return self._no_memory()
        fact = next((f for f in self.state.facts if f["id"] == str(content.get("id", ""))), None)
        if fact is None or not memory.remove(fact["id"]):
            return self.refresh()
        changed = self.state.set_receipt("forgot", fact["text"], scope=fact["scope"], source=fact["source"], undo=True)
        return changed | self.refresh()

    def undo(self, content: dict[str, Any]) -> set[str]:
        """Put back what the receipt ``content["id"]`` names: a saved fact becomes a suggestion again, and so on."""
        memory, receipt = self.memory, self.state.receipt
        if memory is None or not receipt.get("undo") or receipt.get("id") != content.get("id"):
            return set()
        action, text = receipt["action"], receipt["text"]
        scope = receipt.get("scope") or self.scope or "global"
        if action == "saved":
            memory.remove(receipt["fact_id"])
            memory.suggest(self.session.name, [text], scope=scope)
        elif action == "dismissed":
            memory.suggest(self.session.name, [text], scope=scope)
        elif action == "forgot":
            memory.add(text, scope=scope, source=receipt.get("source") or "manual")
        return self.state.set_receipt("undone", text, was=action, undo=False) | self.refresh()

    def _no_memory(self) -> set[str]:
        return self.state.add_notice("error", "this session has no memory service: nothing was saved")
