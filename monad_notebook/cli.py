"""The ``monad`` command: ``monad demo`` runs a real data-exploration session from the terminal."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from monad_notebook import events as ev
from monad_notebook.approval.gate import stdin_approver
from monad_notebook.cell.screen import say_error
from monad_notebook.config import SCRIPTED_DEMO_MODEL, ConfigWatcher
from monad_notebook.demo import DEMO_QUESTIONS, dataset_path
from monad_notebook.errors import MonadError
from monad_notebook.events import Event
from monad_notebook.redaction.redactor import builtin_redactor
from monad_notebook.session import Session
from monad_notebook.store.lance import open_store


def _demo_overrides(args: argparse.Namespace) -> tuple[dict, str]:
    """The model the demo runs on: a real endpoint when asked for, else the scripted demo model."""
    real = bool(args.model or args.base_url or os.environ.get(args.api_key_env))
    main: dict = {"apiKeyEnv": args.api_key_env}
    if real:
        if args.model:
            main["model"] = args.model
        if args.base_url:
            main["baseUrl"] = args.base_url
        if args.context_window:
            main["contextWindow"] = args.context_window
        label = f"model {args.model or 'gpt-4.1-mini'}" + (f" at {args.base_url}" if args.base_url else "")
    else:
        main["model"] = SCRIPTED_DEMO_MODEL
        label = "scripted demo model, no LLM (pass --model/--base-url or set OPENAI_API_KEY for a real one)"
    overrides = {"models": {"main": main}, "tools": {"python": {"approval": "auto"}}}
    if args.db:
        overrides["store"] = {"uri": args.db}
    return overrides, label


def _print_event(event: Event) -> None:
    data = event.data
    if event.kind == ev.TOOL_STARTED:
        first = " ".join(str(data.get("arguments", "")).split())[:90]
        written = f" (written as text: {data['recovered']})" if data.get("recovered") else ""
        print(f"  -> {data['name']}({first}){written}")
    elif event.kind == ev.TOOL_FINISHED:
        preview = " ".join(str(data.get("preview", "")).split())[:90]
        print(f"     <- {preview}")
    elif event.kind == ev.EVICTED:
        print(f"  [context] cleared {data['count']} old tool result(s), {data['reclaimed']} tokens, recoverable")
    elif event.kind == ev.TEXT_CALLS_UNUSED:
        print(f"  [tool calls] {data['message']}")


def run_demo(args: argparse.Namespace) -> int:
    overrides, label = _demo_overrides(args)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="monad-demo-")).resolve()
    (workdir / "data").mkdir(parents=True, exist_ok=True)
    shutil.copy(dataset_path(), workdir / "data" / "sales.csv")
    watcher = ConfigWatcher(overrides=overrides)
    store = open_store(watcher.current())
    if store.get_session(args.session) is not None:
        store.delete_session(args.session)
    namespace: dict = {}
    print(f"monad demo: {label}")
    print(
        f"working directory {workdir}, python tool approval: auto (demo; a call read from the model's text asks "
        f"first, at this prompt), session {args.session!r}\n"
    )
    totals = {"turns": 0, "steps": 0, "tool calls": 0, "prompt tokens sent": 0}
    estimated = False
    written = 0  # tool calls the model wrote as text, run as calls
    session = None
    for number, question in enumerate(DEMO_QUESTIONS, 1):
        if number == len(DEMO_QUESTIONS):
            print("(reopening the session from the store, as a restarted kernel would)\n")
            namespace = {}
        if session is None or number == len(DEMO_QUESTIONS):
            session = Session(
                args.session, config=watcher, store=store, namespace=namespace, root=workdir, approve=stdin_approver()
            )
            session.events.subscribe(_print_event)
        print(f"[turn {number}] you: {question}")
        previous = Path.cwd()
        os.chdir(workdir)
        try:
            reply = session.ask(question)
        finally:
            os.chdir(previous)
        print(f"[turn {number}] monad: {reply.text}\n")
        totals["turns"] += 1
        totals["steps"] += reply.steps
        totals["tool calls"] += reply.tool_calls
        written += reply.recovered_calls
        totals["prompt tokens sent"] += reply.prompt_tokens
        estimated = estimated or reply.estimated
    assert session is not None
    rows = {
        "stored messages": store.count_messages(args.session),
        "stored events": len(store.list_events(args.session)),
    }
    if estimated:
        totals["prompt tokens sent"] = f"{totals['prompt tokens sent']} (estimated)"
    if written:
        totals["tool calls"] = f"{totals['tool calls']} ({written} written as text)"
    print("| what | count |\n| --- | --- |")
    for key, value in {**totals, **rows}.items():
        print(f"| {key} | {value} |")
    store.close()
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of tokens above 0, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="monad", description="monad-notebook: an agent in your notebook.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a multi-turn data-exploration session on a bundled dataset")
    demo.add_argument("--model", help="a real model id (default: the scripted demo model)")
    demo.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1")
    demo.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env var holding the API key")
    demo.add_argument(
        "--context-window",
        type=_positive,
        help="the server's context in tokens, when it is not the model's own (llama-server -c, Ollama num_ctx)",
    )
    demo.add_argument("--db", help="LanceDB URI (default: store.uri, else ~/.monad/db)")
    demo.add_argument("--workdir", help="where the dataset is copied (default: a new temp dir)")
    demo.add_argument("--session", default="demo", help="session name (replaced on each run)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        code = run_demo(args)
    except MonadError as exc:
        say_error(str(exc), lambda text: builtin_redactor().redact(text).text)
        return 1
    except KeyboardInterrupt:
        print("monad: interrupted", file=sys.stderr)
        return 130
    print(f"\ndone in {time.perf_counter() - started:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
