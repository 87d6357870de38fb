"""A weak briefing from a small fast model is caught and replaced by the extractive one, the ledger kept.

Weak beyond a missing heading (test_summary_acceptance.py): nothing under the headings, the transcript
pasted back, or more text than the span it folds. The fast model is the fake server over real HTTP.
"""

from __future__ import annotations

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.cell.view import note_for
from monad_notebook.config import Config
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.ledger_text import parse_ledger
from monad_notebook.context.compaction.summarize import (
    SECTIONS,
    LLMSummarizer,
    parse_sections,
    render_span,
    summarize_with_fallback,
)
from monad_notebook.context.compaction.weakness import weakness
from monad_notebook.messages import Message, ToolCall
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel

TABLE = "\n".join(f"2026-0{m}-{d:02d},North,widget,{d},{d * 12.5:.2f}" for m in (1, 2, 3) for d in range(1, 29))


def span() -> list[Message]:
    call = ToolCall("call_1", "read_file", '{"path": "data/sales.csv"}')
    return [
        Message("user", "Load data/sales.csv and tell me which region grew fastest last quarter."),
        Message("assistant", "", tool_calls=[call]),
        Message("tool", f"date,region,product,units,revenue\n{TABLE}", tool_call_id="call_1", name="read_file"),
        Message(
            "assistant", "North grew 16.9% and South 20.9%: South grew fastest. Next I will save region_summary.csv."
        ),
    ]


def briefing(**bodies: str) -> str:
    return "\n\n".join(f"## {name}\n{bodies.get(name, '')}" for name in SECTIONS)


GOOD = briefing(
    **{
        "Objective": "- Find which region grew fastest last quarter in `data/sales.csv`",
        "Decisions & Facts": "- South grew fastest (20.9%), North 16.9%",
        "Files & State": "- read `data/sales.csv`: columns `date`, `region`, `product`, `units`, `revenue`",
        "Open Tasks": "- save `region_summary.csv`",
        "Next Step": "- write `region_summary.csv`",
    }
)
EMPTY = briefing()
COPY = briefing(**{"Decisions & Facts": render_span(span()), "Next Step": "- continue"})
# Qwen2.5-Coder-1.5B as the fast tier, summarizing the ten-turn benchmark session: one sentence, over and over
LOOPING = briefing(
    **{
        "Objective": "- Analyze `data/sales.csv`",
        "Files & State": "\n".join(
            f"- The `pd.read_csv` function is used to load the data into a DataFrame named `{name}`."
            for name in ("sales", "monthly_units", "revenue_by_region") * 3
        ),
        "Next Step": "- continue",
    }
)
# invented words, none copied: far more than the span it folds
RAMBLING = briefing(
    Objective="- " + " ".join(f"the analysis weighed aspect {i} of the sales at length" for i in range(300))
)


@pytest.mark.parametrize(
    ("weak", "reason"),
    [
        (EMPTY, "it is empty: nothing under its headings"),
        (COPY, "it copies the transcript instead of summarizing it"),
        (LOOPING, "it repeats one line 3 times"),
        (RAMBLING, "it is longer than what it summarizes"),
    ],
)
def test_each_kind_of_weak_briefing_is_retried_then_replaced_by_the_extractive_one(weak, reason):
    heard: list[tuple[str, int]] = []
    model = ScriptedModel([weak, weak])
    summarizer = LLMSummarizer(model, on_rejected=lambda why, attempt: heard.append((why, attempt)))
    summary, why = summarize_with_fallback(summarizer, ExtractiveSummarizer(), None, span())
    assert summary == ExtractiveSummarizer().summarize(None, span())
    assert why is not None and why.startswith(reason) and [attempt for _, attempt in heard] == [1, 2]
    assert reason in model.calls[1].last_message["content"]  # the retry says what was wrong


def test_a_good_briefing_of_the_same_span_is_kept():
    summary, why = summarize_with_fallback(LLMSummarizer(ScriptedModel([GOOD])), ExtractiveSummarizer(), None, span())
    assert why is None and parse_sections(summary)["Decisions & Facts"] == "- South grew fastest (20.9%), North 16.9%"


def test_short_lines_said_in_several_sections_are_not_a_loop():
    said = briefing(**{name: "- none yet" for name in SECTIONS})
    assert weakness(said, transcript=render_span(span())) is None


def test_words_kept_from_the_previous_briefing_never_count_as_copied():
    previous = briefing(**{"Decisions & Facts": render_span(span()[:1]) + "\n- revenue is in euros, per the user"})
    kept = previous.replace("## Next Step", "## Next Step\n- write `region_summary.csv`")
    assert weakness(kept, transcript=render_span(span()[2:]), previous=previous) is None


def test_a_reflection_longer_than_the_briefing_it_condenses_is_rejected():
    assert weakness(RAMBLING, transcript="", previous=GOOD).startswith("it is longer than what it summarizes")
    assert weakness(GOOD, transcript="", previous=RAMBLING) is None


def compacted(store, fast_answers: list[str]) -> tuple[Session, list[ev.Event]]:
    with FakeOpenAIServer() as server:
        config = Config.model_validate(
            {
                "models": {"main": {"model": "qwen2.5-coder-1.5b", "baseUrl": server.base_url, "maxRetries": 0}},
                "context": {"summarize": {"keepRecent": 1, "background": False}},
            }
        )
        session = Session("weak", config=config, store=store)
        landed: list[ev.Event] = []
        session.events.subscribe(lambda e: landed.append(e) if e.kind == ev.COMPACTION_APPLIED else None)
        server.queue(
            "South grew fastest: 20.9% against North's 16.9%, read from `data/sales.csv`.",
            "Saved `region_summary.csv` with columns `region`, `units`, `revenue`.",
        )
        session.ask("Which region grew fastest last quarter in data/sales.csv?")
        session.ask("Save a per-region summary to region_summary.csv.")
        server.queue(*fast_answers)
        assert session.compact()
    return session, landed


def test_a_session_replaces_a_copied_briefing_says_why_in_one_line_and_keeps_its_ledger(tmp_path):
    from monad_notebook.store.lance import LanceStore

    kept_store, weak_store = LanceStore(tmp_path / "kept"), LanceStore(tmp_path / "weak")
    good = briefing(
        **{
            "Objective": "- Which region grew fastest; save a per-region summary",
            "Decisions & Facts": "- South grew fastest (20.9%)",
            "Files & State": "- `region_summary.csv` saved",
            "Open Tasks": "- none",
            "Next Step": "- wait for the user",
        }
    )
    kept_session, _ = compacted(kept_store, [good])
    transcript = (
        "USER: Which region grew fastest last quarter in data/sales.csv?\n"
        "ASSISTANT: South grew fastest: 20.9% against North's 16.9%, read from `data/sales.csv`.\n"
        "USER: Save a per-region summary to region_summary.csv."
    )
    copy = briefing(**{"Decisions & Facts": transcript})
    weak_session, landed = compacted(weak_store, [copy, copy])
    kept_session.close()
    weak_session.close()
    kept, replaced = kept_store.load_summary("weak").text, weak_store.load_summary("weak").text
    assert "South grew fastest (20.9%)" in kept and "South grew fastest (20.9%)" not in replaced
    assert parse_ledger(replaced) == parse_ledger(kept) and "data/sales.csv" in parse_ledger(replaced)
    (finished,) = [e.data for e in weak_store.list_events("weak", kind=ev.COMPACTION_FINISHED)]
    assert finished["used_fallback"] is True
    assert finished["replaced"] == "it copies the transcript instead of summarizing it"
    tag, line, _ = note_for(landed[-1])
    assert tag == "summarized" and "\n" not in line
    assert line.endswith(
        "extractive summary used, the fast model's was not kept: it copies the transcript instead of summarizing it"
    )
    kept_store.close()
    weak_store.close()


def test_monad_compact_says_when_the_fast_models_summary_was_not_kept(ip, isolated_env, capsys):
    import json

    with FakeOpenAIServer() as server:
        main = {"model": "qwen2.5-coder-1.5b", "baseUrl": server.base_url, "maxRetries": 0}
        config = {"models": {"main": main}, "context": {"summarize": {"keepRecent": 1, "background": False}}}
        (isolated_env / "agents.json").write_text(json.dumps(config))
        ip.run_line_magic("reload_ext", "monad_notebook")
        server.queue("South grew fastest.", "Saved it.", EMPTY, EMPTY)
        ip.run_cell_magic("monad", "--session compacted", "Which region grew fastest?")
        ip.run_cell_magic("monad", "--session compacted", "Save a summary.")
        capsys.readouterr()
        ip.run_line_magic("monad", "compact")
    out = capsys.readouterr().out
    assert "compacted: " in out
    assert "the fast model's summary was not kept (it is empty: nothing under its headings)" in out
