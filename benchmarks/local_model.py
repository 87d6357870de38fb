"""A real small local model, as a user runs it: the demo, then a ten-turn data session.

    python benchmarks/local_model.py [--part demo|session|all] [--ctx 16384] [--turns 10] [--json FILE]

The model is Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), fetched once into the fixture cache with pinned
hashes (``fixtures.py``), served by llama.cpp's ``llama-server --jinja`` on one thread, as a user
would start it. It is the main tier (the agent) and the fast tier (summaries) at once. Every setting
is the default but two, in agents.json: ``contextWindow``, the server's ``-c`` (``--ctx``), and,
since nobody is there to click, ``tools.python.approval`` "auto". A call the model writes as text
asks first whatever that setting says (``agent/tools/consent.py``): here a user who answers yes to
every such question stands in (``approve_all``).

(a) ``monad demo`` through its own command-line entry point. (b) Ten questions on the bundled sales
data that need Python, each checked against the answer computed here from the same CSV: a variable
or file it had to make, or a figure its answer had to state. Per turn: the tool calls made through
the API, those written as text and run, those written as text that could not run, whether it did the
work asked, tokens and seconds. After the ten turns the session is compacted once, as
``%monad compact`` does, so the fast tier writes at least one summary: the summaries it wrote, kept
or replaced by the extractive one (and why), and the forms the agent's raw replies took.
``--replies FILE`` writes every raw reply the agent's requests got, as sent, with the form each
was read as: the forms the tests script (``tests/agent/text_call_replies.py``) come from there.
Not in CI: the fake server scripts the same text forms for the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd
from fixtures import chat_server, fetch
from raw_replies import RawReplies

from monad_notebook import Session, cli
from monad_notebook import events as ev
from monad_notebook.agent.instructions import SYSTEM_PROMPT
from monad_notebook.config import Config
from monad_notebook.demo import dataset_path
from monad_notebook.store.lance import LanceStore

MODEL = "qwen2.5-coder-1.5b"
Check = Callable[[dict[str, Any], Path, str], tuple[bool, str]]


@dataclass
class Turn:
    number: int
    question: str
    seconds: float
    steps: int
    api_calls: int
    written_run: int
    written_refused: int
    prompt_tokens: int
    completion_tokens: int
    did_work: bool | None  # None: the demo's questions are not checked
    why: str
    answer: str
    note: str = ""


def approve_all(text: str, subject: str = "python") -> bool:
    """A user who answers yes to every question (nobody sits at this run)."""
    return True


@dataclass
class Run:
    name: str
    replies: list[dict[str, Any]] = field(default_factory=list)  # every raw reply (``RawReplies.dump``)
    turns: list[Turn] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    forms: Counter[str] = field(default_factory=Counter)
    summary: str = ""  # the session's rolling summary at the end, as saved


# --- the two runs ---------------------------------------------------------------------------------


def user_config(base_url: str, ctx: int, home: Path, note: str = "") -> Path:
    """agents.json as a user of a local server writes it; ``note`` is added to the system prompt."""
    path = home / "agents.json"
    main = {"model": MODEL, "baseUrl": base_url, "contextWindow": ctx}
    config: dict[str, Any] = {"models": {"main": main}, "tools": {"python": {"approval": "auto"}}}
    if note:
        config["agent"] = {"systemPrompt": f"{SYSTEM_PROMPT}\n{note}"}
    path.write_text(json.dumps(config))
    return path


def run_demo(base_url: str, ctx: int, home: Path) -> Run:
    """``monad demo`` through its own entry point; each Session it opens is watched for its replies."""
    run, watched = Run("demo"), []

    class Watched(cli.Session):
        def ask(self, text, **kwargs):  # type: ignore[no-untyped-def]
            self.approve = approve_all
            started = time.perf_counter()
            reply = super().ask(text, **kwargs)
            watched.append((self, self.turn, text, reply, time.perf_counter() - started))
            return reply

    os.environ["MONAD_CONFIG"] = str(user_config(base_url, ctx, home))
    cli.Session = Watched  # type: ignore[misc]
    db = home / "demo-db"
    where = ["--db", str(db), "--workdir", str(home / "demo-work")]
    try:
        with RawReplies() as raw:
            code = cli.main(["demo", "--base-url", base_url, "--model", MODEL, "--context-window", str(ctx), *where])
    finally:
        cli.Session = Session  # type: ignore[misc]
    print(f"(monad demo exited with {code})\n")
    for number, (session, turn, question, reply, seconds) in enumerate(watched, 1):
        run.turns.append(turn_of(number, question, reply, seconds, session, turn, None, ""))
    run.forms = raw.forms(watched[-1][0].tools) if watched else Counter()
    run.replies = raw.dump(watched[-1][0].tools) if watched else []
    store = LanceStore(db)
    read_summaries(run, store, "demo")
    store.close()
    return run


def run_session(base_url: str, ctx: int, home: Path, turns: int, note: str = "") -> Run:
    run = Run("session")
    work = home / "session-work"
    (work / "data").mkdir(parents=True)
    shutil.copy(dataset_path(), work / "data" / "sales.csv")
    truth = Truth(pd.read_csv(work / "data" / "sales.csv", parse_dates=["date"]))
    store = LanceStore(home / "session-db")
    namespace: dict[str, Any] = {}
    config = Config.model_validate(json.loads(user_config(base_url, ctx, home, note).read_text()))
    session = Session("local", config=config, store=store, namespace=namespace, root=work, approve=approve_all)
    with RawReplies() as raw:
        for number, (question, check) in enumerate(truth.questions()[:turns], 1):
            print(f"[turn {number}] you: {question}", flush=True)
            started = time.perf_counter()
            # as the demo does, in the project the agent's code reads paths from; what its code prints is
            # the notebook's to show, not this report's
            with contextlib.chdir(work), contextlib.redirect_stdout(io.StringIO()):
                reply = session.ask(question)
            seconds = time.perf_counter() - started
            did, why = check(namespace, work, reply.text)
            run.turns.append(turn_of(number, question, reply, seconds, session, session.turn, did, why))
            print(f"[turn {number}] monad ({seconds:.0f} s): {one_line(reply.text, 300)}", flush=True)
            print(f"    did the work: {'yes' if did else 'no'} ({why})\n", flush=True)
    session.wait_for_background(1800)
    print("(%monad compact)", flush=True)
    session.compact()
    run.forms = raw.forms(session.tools)
    run.replies = raw.dump(session.tools)
    read_summaries(run, store, "local")
    summary = store.load_summary("local")
    run.summary = summary.text if summary is not None else ""
    session.close()
    store.close()
    return run


def turn_of(
    number: int, question: str, reply: Any, seconds: float, session: Session, turn: int, did: bool | None, why: str
) -> Turn:
    """One turn's figures; ``turn`` is the session's number for it, which its ``tool.text_calls`` events carry."""
    written = [e for e in session.store.list_events(session.name, kind=ev.TEXT_CALLS) if e.data.get("turn") == turn]
    tried = sum(len(e.data.get("calls") or []) for e in written)
    return Turn(
        number=number,
        question=question,
        seconds=round(seconds, 1),
        steps=reply.steps,
        api_calls=reply.tool_calls - tried,  # every written call the turn read went through the tool runner
        written_run=reply.recovered_calls,
        written_refused=max(0, tried - reply.recovered_calls),
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        did_work=did,
        why=why,
        answer=one_line(reply.text, 160),
        note=reply.text_call_note,
    )


def read_summaries(run: Run, store: LanceStore, name: str) -> None:
    for event in store.list_events(name, kind=ev.COMPACTION_FINISHED):
        run.summaries.append(
            {k: event.data.get(k) for k in ("used_fallback", "replaced", "seconds", "tokens_before", "tokens_after")}
        )
    for event in store.list_events(name, kind=ev.SUMMARY_REJECTED):
        run.rejected.append({k: event.data.get(k) for k in ("attempt", "reason", "then")})


def one_line(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- the ten questions and their answers ----------------------------------------------------------


class Truth:
    """The answers, computed here from the same CSV the session reads."""

    def __init__(self, sales: pd.DataFrame) -> None:
        self.sales = sales
        self.by_region = sales.groupby("region")["revenue"].sum()
        self.monthly = sales.assign(month=sales["date"].dt.strftime("%Y-%m")).pivot_table(
            index="month", columns="region", values="units", aggfunc="sum"
        )
        units = sales.groupby("product")["units"].sum()
        self.top_product, self.top_units = units.idxmax(), int(units.max())
        self.price = sales.groupby("product")["revenue"].sum() / units
        daily = sales.groupby("date")["revenue"].sum()
        self.top_day, self.top_day_revenue = daily.idxmax(), float(daily.max())

    def questions(self) -> list[tuple[str, Check]]:
        return [
            (
                "Load data/sales.csv into a pandas DataFrame named `sales`, with the `date` column parsed as "
                "dates. How many rows does it have?",
                self.loaded,
            ),
            ("Add a column `month` to `sales` holding each row's month as text, like 2025-01.", self.month),
            ("Compute the total revenue per region into a pandas Series named `revenue_by_region`.", self.regions),
            ("Which region had the highest total revenue? Answer with its name.", self.best_region),
            (
                "Make a DataFrame `monthly_units` with the total units per month (one row per month) and region "
                "(one column per region).",
                self.monthly_units,
            ),
            ("Save `monthly_units` to monthly_units.csv in the working directory.", self.saved),
            ("Which product sold the most units overall, and how many units?", self.best_product),
            (
                "Compute the revenue per unit of each product (its total revenue divided by its total units) into "
                "a pandas Series named `price_per_unit`.",
                self.prices,
            ),
            ("On which date was the total revenue across all regions the highest, and how much was it?", self.best_day),
            ("Recap this session: which variables and files did we create?", self.recap),
        ]

    def loaded(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        sales = ns.get("sales")
        if not isinstance(sales, pd.DataFrame):
            return False, "no DataFrame named sales"
        dated = pd.api.types.is_datetime64_any_dtype(sales.get("date"))
        return len(
            sales
        ) == 936 and dated and "936" in text, f"{len(sales)} rows, dates parsed: {dated}, says 936: {'936' in text}"

    def month(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        sales = ns.get("sales")
        if not isinstance(sales, pd.DataFrame) or "month" not in sales:
            return False, "sales has no month column"
        expected = pd.to_datetime(sales["date"]).dt.strftime("%Y-%m")
        same = (sales["month"].astype(str).str[:7] == expected).mean()
        return same == 1.0, f"{same:.0%} of months right"

    def regions(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        return close_series(ns.get("revenue_by_region"), self.by_region, "revenue_by_region")

    def best_region(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        best = self.by_region.idxmax()
        others = [r for r in self.by_region.index if r != best and r in text]
        return best in text and not others, f"names {best}: {best in text}; names others too: {others}"

    def monthly_units(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        table = ns.get("monthly_units")
        if not isinstance(table, pd.DataFrame):
            return False, "no DataFrame named monthly_units"
        right = table.shape == self.monthly.shape and int(table.to_numpy().sum()) == int(self.monthly.to_numpy().sum())
        return right, f"shape {table.shape} (expected {self.monthly.shape})"

    def saved(self, ns: dict[str, Any], work: Path, text: str) -> tuple[bool, str]:
        path = work / "monthly_units.csv"
        if not path.is_file():
            return False, "no monthly_units.csv"
        rows = len(pd.read_csv(path))
        return rows == len(self.monthly), f"{rows} rows written (expected {len(self.monthly)})"

    def best_product(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        count = any(f in text for f in (str(self.top_units), f"{self.top_units:,}"))
        return (
            self.top_product in text and count,
            f"names {self.top_product}: {self.top_product in text}; states {self.top_units:,}: {count}",
        )

    def prices(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        return close_series(ns.get("price_per_unit"), self.price, "price_per_unit")

    def best_day(self, ns: dict[str, Any], _: Path, text: str) -> tuple[bool, str]:
        day = self.top_day.strftime("%Y-%m-%d")
        amount = f"{self.top_day_revenue:,.0f}" in text or f"{self.top_day_revenue:.0f}" in text
        return day in text and amount, f"states {day}: {day in text}; states {self.top_day_revenue:,.0f}: {amount}"

    def recap(self, ns: dict[str, Any], work: Path, text: str) -> tuple[bool, str]:
        """Names what the session really made, and claims nothing it did not make."""
        asked = {n: n in ns for n in ("sales", "revenue_by_region", "monthly_units", "price_per_unit")}
        asked["monthly_units.csv"] = (work / "monthly_units.csv").is_file()
        made = [n for n, exists in asked.items() if exists]
        missed = [n for n in made if n not in text]
        claimed = [n for n, exists in asked.items() if not exists and n in text]
        right = bool(made) and not missed and not claimed
        return right, f"made {', '.join(made) or 'nothing'}; not named: {missed}; named but never made: {claimed}"


def close_series(found: Any, expected: pd.Series, name: str) -> tuple[bool, str]:
    if isinstance(found, pd.DataFrame) and found.shape[1] == 1:
        found = found.iloc[:, 0]
    if not isinstance(found, pd.Series):
        return False, f"no Series named {name}"
    try:
        diff = (found.astype(float).reindex(expected.index) - expected).abs().max()
    except (TypeError, ValueError) as exc:
        return False, f"{name} is not numeric by the expected index ({exc})"
    return bool(diff < 0.01), f"largest difference {diff:.4g}"


# --- the report -----------------------------------------------------------------------------------


def report(run: Run) -> None:
    title = "the demo (`monad demo`)" if run.name == "demo" else "the ten-turn data session"
    print(f"### {title}\n")
    columns = ["turn", "seconds", "steps", "API calls", "written as text, run", "written, could not run"]
    columns += ["prompt tokens", "completion tokens", "did the work", "answer"]
    print("| " + " | ".join(columns) + " |")
    print("| ---: " * 8 + "| --- | --- |")
    for t in run.turns:
        did = "n/a" if t.did_work is None else ("yes" if t.did_work else f"no: {t.why}")
        print(
            f"| {t.number} | {t.seconds:.0f} | {t.steps} | {t.api_calls} | {t.written_run} | {t.written_refused} | "
            f"{t.prompt_tokens:,} | {t.completion_tokens:,} | {did} | {t.answer.replace('|', '/')} |"
        )
    turns = run.turns
    total = sum(t.seconds for t in turns)
    print(
        f"\n{len(turns)} turns in {total:.0f} s ({total / max(1, len(turns)):.0f} s a turn); tool calls: "
        f"{sum(t.api_calls for t in turns)} through the API, {sum(t.written_run for t in turns)} written as text "
        f"and run, {sum(t.written_refused for t in turns)} written as text that could not run"
    )
    checked = [t for t in turns if t.did_work is not None]
    if checked:
        print(f"turns that did the work asked: {sum(bool(t.did_work) for t in checked)} of {len(checked)}")
    notes = [t for t in turns if t.note]
    for t in notes:
        print(f"turn {t.number} told the user: {t.note}")
    kept = sum(not s["used_fallback"] for s in run.summaries)
    replaced = len(run.summaries) - kept
    print(f"summaries by the fast tier: {len(run.summaries)} written, {kept} kept, {replaced} by the extractive one")
    for s in run.summaries:
        if s["replaced"]:
            print(f"  replaced: {s['replaced']}")
    for r in run.rejected:
        print(f"  rejected (attempt {r['attempt']}, then {r['then']}): {r['reason']}")
    if run.summary:
        lines = run.summary.strip().splitlines()
        shown = "\n".join(lines[:40]) + (f"\n… {len(lines) - 40} more lines" if len(lines) > 40 else "")
        print(f"the summary saved at the end:\n\n```\n{shown}\n```")
    print(
        "forms of the agent's raw replies: " + ", ".join(f"{form} {count}" for form, count in sorted(run.forms.items()))
    )
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("demo", "session", "all"), default="all")
    parser.add_argument("--ctx", type=int, default=16384, help="the server's context (llama-server -c)")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--json", help="also write the measurements here")
    parser.add_argument("--replies", help="write every raw reply of the agent's requests here (JSON)")
    parser.add_argument("--prompt-note", default="", help="a sentence added to the system prompt (agent.systemPrompt)")
    args = parser.parse_args()
    path = fetch("qwen")
    home = Path(tempfile.mkdtemp(prefix="monad-local-model-"))
    os.environ["MONAD_HOME"] = str(home)
    runs: list[Run] = []
    started = time.perf_counter()
    with chat_server(path, ctx=args.ctx, threads=1) as base_url:
        if args.part in ("demo", "all"):
            runs.append(run_demo(base_url, args.ctx, home))
        if args.part in ("session", "all"):
            runs.append(run_session(base_url, args.ctx, home, args.turns, args.prompt_note))
    print(f"## A small local model, as a user runs it\n\n{path.name}, llama-server --jinja -c {args.ctx} -t 1")
    if args.prompt_note:
        print(f"system prompt: the default, and {args.prompt_note!r}")
    print()
    for run in runs:
        report(run)
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps([{**asdict(r), "forms": dict(r.forms)} for r in runs], indent=2))
    if args.replies:
        Path(args.replies).write_text(json.dumps({r.name: r.replies for r in runs}, indent=2, ensure_ascii=False))
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
