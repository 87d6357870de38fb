"""``%%monad`` and ``%monad``: parse, call the Session, display.

Every error a user can cause prints one line; nothing here raises a traceback at them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from IPython.core.magic import Magics, line_cell_magic, magics_class

from monad_notebook import events as ev
from monad_notebook.approval.asking import AskIn
from monad_notebook.approval.gate import ApprovalGate
from monad_notebook.cell.background import Inbox
from monad_notebook.cell.heap import settle_heap
from monad_notebook.cell.help import HELP
from monad_notebook.cell.prompt_record import render_prompt_record
from monad_notebook.cell.rewind import (
    PanelRewinds,
    rebuild_lines,
    rebuild_offer,
    rewind_session,
    rewind_turn,
    rewound_from,
    sweep_kept,
    undo_lines,
)
from monad_notebook.cell.screen import say_error, screened
from monad_notebook.cell.status import footer_for, notebook_sentence, status_sentences
from monad_notebook.cell.view import CellView
from monad_notebook.config import ConfigWatcher
from monad_notebook.errors import MonadError, UsageError
from monad_notebook.events import Event
from monad_notebook.export import export_notebook, last_turn_code
from monad_notebook.redaction.redactor import builtin_redactor

if TYPE_CHECKING:  # the session pulls in LanceDB and openai: loaded on the first cell, or warmed up in the background
    from monad_notebook.notebook.frontend import NotebookFrontend
    from monad_notebook.session import Session
    from monad_notebook.store.base import Store


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message}; usage: {self.format_usage().strip().removeprefix('usage: ')}")


def _cell_parser() -> _Parser:
    parser = _Parser(prog="%%monad", add_help=False)
    parser.add_argument("--session", "-s")
    parser.add_argument("--model", "-m")
    parser.add_argument("--new", action="store_true")
    return parser


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"cannot parse arguments ({exc}); quote names with spaces") from None


@magics_class
class MonadMagics(Magics):
    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.current: str | None = None  # None until the first cell: then this notebook's own session
        self.overrides: dict[str, Any] = {}
        self._watcher: ConfigWatcher | None = None
        self._store: Store | None = None
        self._sessions: dict[str, Session] = {}
        self._panels: dict[str, Any] = {}
        self.inbox = Inbox.installed()

    # --- plumbing -------------------------------------------------------------------

    @property
    def watcher(self) -> ConfigWatcher:
        if self._watcher is None:
            self._watcher = ConfigWatcher(overrides=self.overrides)
        return self._watcher

    @property
    def store(self) -> Store:
        if self._store is None:
            from monad_notebook.store.lance import open_store

            self._store = open_store(self.watcher.current())
        return self._store

    def session(self, name: str | None = None) -> Session:
        notebook, name = self._own_session() if not (name or self.current) else (None, name)
        name = name or self.current or "default"
        if name not in self._sessions:
            from monad_notebook.notebook.frontend import open_notebook
            from monad_notebook.session import Session

            notebook = notebook or open_notebook(self.shell)  # None where nobody sits at a notebook (nbclient)
            asker = AskIn(self.rich, self._panels.get)
            session = Session(
                name, config=self.watcher, store=self.store, shell=self.shell, notebook=notebook, asker=asker
            )
            session.events.subscribe(self.inbox.on_event)
            self._sessions[name] = session
            if offer := rebuild_offer(session):
                print(self.redact(offer))
        self.current = name
        return self._sessions[name]

    def _own_session(self) -> tuple[NotebookFrontend | None, str]:
        """This notebook's own session (see ``notebook/ownership.py``), named in its metadata where it can be."""
        from monad_notebook.notebook.frontend import open_notebook
        from monad_notebook.notebook.ownership import identity_of, own_session

        notebook = open_notebook(self.shell)
        identity = identity_of(self.shell, notebook)
        owned = own_session(self.store, identity)
        if owned.note:
            print(f"monad: {owned.note}")
        if notebook is not None and identity.path and identity.claimed != owned.name:
            notebook.name_session(owned.name)
        return notebook, owned.name

    def after_cell(self, result: Any) -> None:
        """IPython's ``post_run_cell``: each session here notes what the user's cell changed in the kernel, and the
        cell itself for its next turn."""
        for session in list(self._sessions.values()):
            session.activity.after_cell(result)
            try:
                session.workspace.after_cell(result)
            except MonadError as exc:  # the store could not be written: say so, keep the cell's own result
                say_error(f"the workspace record was not saved: {exc}", self.redact)

    @property
    def rich(self) -> bool:
        return type(self.shell).__name__ == "ZMQInteractiveShell"

    # --- the magic ------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """What the cell may show of ``text``: the session's redaction, or the built-in one before any session."""
        session = self._sessions.get(self.current or "")
        return session.cascade.redact(text) if session is not None else builtin_redactor().redact(text).text

    @line_cell_magic
    def monad(self, line: str, cell: str | None = None) -> Any:
        try:
            if cell is None:
                with screened(self.redact):
                    return self._line(line)
            return self._cell(line, cell)
        except MonadError as exc:
            say_error(str(exc), self.redact)
        except KeyboardInterrupt:
            print(
                "monad: interrupted. The session is consistent; run another %%monad cell to continue.",
                file=sys.stderr,
            )
        return None

    def _cell(self, line: str, cell: str) -> None:
        args = _cell_parser().parse_args(_split(line))
        if args.model:
            self.overrides.setdefault("models", {}).setdefault("main", {})["model"] = args.model
            self.watcher.set_overrides(self.overrides)
        if args.new:
            name = args.session or time.strftime("session-%Y%m%d-%H%M%S")
            if self.store.get_session(name) is not None:
                raise UsageError(f"session {name!r} already exists; pick another name or %monad reset it")
            args.session = name
        session = self.session(args.session)
        view = CellView(self.rich, inbox=self.inbox, redact=self.redact)
        unsubscribe = session.events.subscribe(view.on_event)
        message = cell.rstrip().lstrip("\n")  # the cell's blank edges
        try:
            reply = session.ask(message, on_text=view.on_text)
        finally:
            unsubscribe()
        if reply.note:
            view.on_text(f"\n\n{reply.note}")
        view.finish(footer_for(session, reply))
        settle_heap()  # after the first cell, what the kernel loaded leaves the full collections

    def _line(self, line: str) -> Any:
        words = _split(line)
        command, rest = (words[0], words[1:]) if words else ("help", [])
        handler = self.COMMANDS.get(command)
        if handler is None:
            raise UsageError(f"unknown command {command!r}; try %monad help")
        try:
            return handler(self, rest)
        finally:
            for notice in self.inbox.drain():
                print(f"background {notice.kind}: {notice.text}")

    def _want(self, rest: list[str], count: int, usage: str) -> list[str]:
        if len(rest) != count:
            raise UsageError(f"usage: %monad {usage}")
        return rest

    def _cmd_help(self, rest: list[str]) -> None:
        print(HELP)

    def _cmd_status(self, rest: list[str]) -> None:
        self._want(rest, 0, "status")
        session = self.session()
        gate = session.approve
        allowed = isinstance(gate, ApprovalGate) and gate.allowed_for_session
        subjects = gate.allowed if isinstance(gate, ApprovalGate) else set()
        servers = {s.removeprefix("mcp:") for s in subjects if s.startswith("mcp:")}
        approval = session.config.tools.python.approval
        print(
            status_sentences(session.status(), approval=approval, allowed_for_session=allowed, allowed_servers=servers)
        )
        print(notebook_sentence(session.notebook))

    def _cmd_sessions(self, rest: list[str]) -> None:
        from monad_notebook.notebook.ownership import listing

        self._want(rest, 0, "sessions")
        print(listing(self.store, self.current))

    def _cmd_session(self, rest: list[str]) -> None:
        (name,) = self._want(rest, 1, "session NAME")
        session = self.session(name)
        print(f"now using session {session.name!r} ({len(session.window.messages)} messages in its window)")

    def _cmd_branch(self, rest: list[str]) -> None:
        (name,) = self._want(rest, 1, "branch NEW")
        source = self.session()
        source.branch(name)
        self.session(name)
        print(f"branched {source.name!r} into {name!r}; now using {name!r}")

    def _cmd_reset(self, rest: list[str]) -> None:
        self._want(rest, 0, "reset")
        session = self.session()
        session.reset()
        if isinstance(session.approve, ApprovalGate):
            session.approve.reset()
        print(f"session {self.current!r} reset: its conversation is forgotten")

    def _cmd_delete(self, rest: list[str]) -> None:
        (name,) = self._want(rest, 1, "delete NAME")
        if self.store.get_session(name) is None:
            raise UsageError(f"no session named {name!r}; see %monad sessions")
        self.store.delete_session(name)
        self._sessions.pop(name, None)
        sweep_kept(self.store, self.watcher.current().rewind)
        if self.current == name:
            self.current = None
        print(f"deleted session {name!r}")

    def _cmd_prompt(self, rest: list[str]) -> None:
        parser = _Parser(prog="%monad prompt", add_help=False)
        parser.add_argument("--step", type=int, default=None)
        args = parser.parse_args(rest)
        print(render_prompt_record(self.session().prompt_records, args.step))

    def _cmd_panel(self, rest: list[str]) -> Any:
        self._want(rest, 0, "panel")
        session = self.session()
        from monad_notebook.widget import MonadPanel

        if not self.rich:
            print(MonadPanel.text_report(session))
            return None
        panel = MonadPanel.for_session(session)
        panel.offer_rewinds(PanelRewinds(self))
        self._panels[session.name] = panel
        return panel

    def _cmd_compact(self, rest: list[str]) -> None:
        self._want(rest, 0, "compact")
        session = self.session()
        landed: list[Event] = []
        unsubscribe = session.events.subscribe(
            lambda event: landed.append(event) if event.kind == ev.COMPACTION_APPLIED else None
        )
        try:
            compacted = session.compact()
        finally:
            unsubscribe()
        if not compacted or not landed:
            print("nothing to compact: the window holds only the most recent messages")
            return
        data = landed[-1].data
        print(
            f"compacted: {data['messages']} older messages folded into the summary; the whole prompt went from "
            f"{data['tokens_before']:,} to {data['tokens_after']:,} tokens (both estimated); the summary is saved"
        )
        if data.get("replaced"):
            print(f"the fast model's summary was not kept ({data['replaced']}): the extractive summary stands in")

    def _cmd_handoff(self, rest: list[str]) -> None:
        (name,) = self._want(rest, 1, "handoff NEW")
        source = self.session()
        source.handoff(name)
        self.session(name)
        print(f"started {name!r} from the summary of {source.name!r}; now using {name!r}")

    def _cmd_memory(self, rest: list[str]) -> None:
        self._want(rest, 0, "memory")
        session = self.session()
        facts = session.memory.list()
        print(f"{len(facts)} remembered fact(s):" if facts else "no remembered facts yet")
        for fact in facts:
            print(f"  {fact.id}  [{fact.scope}] {fact.text}")
        pending = session.memory.pending_suggestions(session.name)
        if pending:
            print(f"remember these {len(pending)} thing(s)?  (%monad remember --accept N / --dismiss N)")
            for number, item in enumerate(pending, 1):
                print(f"  {number}. {item['text']}")

    def _cmd_remember(self, rest: list[str]) -> None:
        parser = _Parser(prog="%monad remember", add_help=False)
        parser.add_argument("fact", nargs="*")
        parser.add_argument("--accept", type=int)
        parser.add_argument("--dismiss", type=int)
        args = parser.parse_args(rest)
        session = self.session()
        if args.accept is not None or args.dismiss is not None:
            number = args.accept if args.accept is not None else args.dismiss
            pending = session.memory.pending_suggestions(session.name)
            if not 1 <= number <= len(pending):
                raise UsageError(f"no pending suggestion {number}; %monad memory lists them")
            item = pending[number - 1]
            if args.dismiss is not None:
                session.memory.dismiss(session.name, item["id"])
                print(f"dismissed: {item['text']}")
                return
            verdict = session.memory.accept(session.name, item["id"])
        else:
            if not args.fact:
                raise UsageError('usage: %monad remember "FACT" | --accept N | --dismiss N')
            verdict = session.memory.add(" ".join(args.fact), scope=session.memory_scope, source="manual")
        if verdict.duplicate_of:
            print(f"already remembered as {verdict.duplicate_of}")
        elif verdict.ok:
            print(f"remembered as {verdict.fact_id}: {verdict.text}")
        else:
            raise UsageError(f"not remembered: {verdict.reason}")

    def _cmd_forget(self, rest: list[str]) -> None:
        (fact_id,) = self._want(rest, 1, "forget ID")
        if not self.session().memory.remove(fact_id):
            raise UsageError(f"no remembered fact {fact_id!r}; %monad memory lists them")
        print(f"forgot {fact_id}")

    def _cmd_config(self, rest: list[str]) -> None:
        self._want(rest, 0, "config")
        config = self.watcher.current()
        source = self.watcher.source or "(no agents.json found: defaults)"
        print(f"# from {source}")
        print(json.dumps(config.to_json_dict(), indent=2))

    def _cmd_export(self, rest: list[str]) -> None:
        parser = _Parser(prog="%monad export", add_help=False)
        parser.add_argument("path")
        parser.add_argument("--session", "-s")
        args = parser.parse_args(rest)
        name = args.session or self.current or self.session().name
        if self.store.get_session(name) is None:
            raise UsageError(f"no session named {name!r}; see %monad sessions")
        if name in self._sessions:
            self._sessions[name].flush_events()
        path, code_cells = export_notebook(self.store, name, args.path, self._history(), self.redact)
        print(f"exported session {name!r} to {path} ({code_cells} code cell(s) to run top to bottom)")

    def _cmd_code(self, rest: list[str]) -> None:
        self._want(rest, 0, "code")
        session = self.session()
        session.flush_events()
        code = last_turn_code(self.store, session.name, self._history(), self.redact)
        self.shell.set_next_input(code, replace=False)
        print("the last turn's code is in the next cell" if self.rich else code)

    def _cmd_rebuild(self, rest: list[str]) -> None:
        print("\n".join(rebuild_lines(self.session(), rest)))

    def _cmd_rewind(self, rest: list[str]) -> None:
        print("\n".join(self.rewind(rest)))

    def rewind(self, rest: list[str], session: str | None = None) -> list[str]:
        """``%monad rewind [TURN] | --undo``, typed in a cell or clicked on the panel's timeline: ``session`` (else the
        one in use) taken back to before the turn, or the rewind that made it undone. The notebook uses the session the
        conversation goes on in from then on, and an open panel of the one it left follows it. What was done, as
        lines."""
        start = self.session(session)
        if rest == ["--undo"]:
            mark = rewound_from(start)
            goes_on = self._switch(str(mark["from"]))
            lines = undo_lines(start, goes_on, mark)
        else:
            name, lines = rewind_session(start, rewind_turn(start, rest))
            goes_on = self._switch(name)
        panel = self._panels.pop(start.name, None)
        if panel is not None:
            panel.follow(goes_on)
            self._panels[goes_on.name] = panel
        return lines

    def _switch(self, name: str) -> Session:
        """Use session ``name`` from now on, and name it in the open notebook, so a new kernel takes it up."""
        from monad_notebook.notebook.frontend import open_notebook

        session = self.session(name)
        notebook = open_notebook(self.shell)
        if notebook is not None:
            notebook.name_session(name)
        return session

    def _history(self) -> list[str]:
        """This kernel's inputs by execution count, where an export finds the user's own cells."""
        manager = getattr(self.shell, "history_manager", None)
        return list(getattr(manager, "input_hist_raw", None) or [])

    # The %monad subcommands: each takes the words after its name.
    COMMANDS: ClassVar[dict[str, Callable[[MonadMagics, list[str]], Any]]] = {
        "help": _cmd_help,
        "status": _cmd_status,
        "sessions": _cmd_sessions,
        "session": _cmd_session,
        "branch": _cmd_branch,
        "reset": _cmd_reset,
        "delete": _cmd_delete,
        "prompt": _cmd_prompt,
        "panel": _cmd_panel,
        "compact": _cmd_compact,
        "handoff": _cmd_handoff,
        "memory": _cmd_memory,
        "remember": _cmd_remember,
        "forget": _cmd_forget,
        "config": _cmd_config,
        "export": _cmd_export,
        "code": _cmd_code,
        "rebuild": _cmd_rebuild,
        "rewind": _cmd_rewind,
    }
