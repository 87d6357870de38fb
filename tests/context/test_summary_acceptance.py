"""A model's briefing is kept only when it finished and holds all five sections; otherwise retry, then extractive."""

from __future__ import annotations

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.summarize import (
    SECTIONS,
    LLMSummarizer,
    parse_sections,
    summarize_with_fallback,
    unfence,
)
from monad_notebook.messages import Message
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, text

GOOD = "\n\n".join(f"## {name}\n- {name.lower()} from the retry" for name in SECTIONS)
# What a weak model wrote under a tight output cap: fenced, one heading, a stale plan, cut off.
WEAK = "```markdown\n## Next Step\n- load `data/sales.csv` (done three turns ago)\n- then"


def span() -> list[Message]:
    return [
        Message("user", "Plot weekly revenue for North from data/sales.csv."),
        Message("assistant", "North's weekly revenue peaks in week 12. Next I will compare it with South."),
    ]


def rejections() -> tuple[list[tuple[str, int]], LLMSummarizer]:
    heard: list[tuple[str, int]] = []
    return heard, LLMSummarizer(ScriptedModel([]), on_rejected=lambda why, attempt: heard.append((why, attempt)))


def test_a_briefing_cut_off_by_the_output_limit_is_retried_shorter_and_the_retry_is_kept():
    heard, summarizer = rejections()
    summarizer.model = model = ScriptedModel([text(GOOD, finish_reason="length"), GOOD])
    summary = summarizer.summarize(None, span())
    assert parse_sections(summary)["Open Tasks"] == "- open tasks from the retry"
    assert "cut off" in model.calls[1].last_message["content"] and "shorter" in model.calls[1].last_message["content"]
    assert heard == [('it was cut off by the output token limit (finish_reason "length")', 1)]


def test_a_briefing_missing_sections_is_retried_and_the_event_names_them():
    heard, summarizer = rejections()
    partial = "## Objective\n- plot\n## Files & State\n- `sales`\n## Next Step\n- plot"
    summarizer.model = ScriptedModel([partial, GOOD])
    summary = summarizer.summarize(None, span())
    assert parse_sections(summary)["Decisions & Facts"] == "- decisions & facts from the retry"
    assert heard == [("it lacks ## Decisions & Facts, ## Open Tasks", 1)]


def test_a_weak_models_briefing_twice_gives_the_extractive_summary():
    heard, summarizer = rejections()
    summarizer.model = ScriptedModel([text(WEAK, finish_reason="length"), text(WEAK, finish_reason="length")])
    summary, used_fallback = summarize_with_fallback(summarizer, ExtractiveSummarizer(), None, span())
    assert used_fallback
    assert summary == ExtractiveSummarizer().summarize(None, span())
    assert "done three turns ago" not in summary and "```" not in summary
    assert [attempt for _, attempt in heard] == [1, 2]


def test_a_complete_briefing_without_its_closing_fence_is_accepted_unwrapped():
    for wrapped in (f"```markdown\n{GOOD}\n```", f"```\n{GOOD}", f"{GOOD}\n```"):
        heard, summarizer = rejections()
        summarizer.model = ScriptedModel([wrapped])
        summary = summarizer.summarize(None, span())
        assert "```" not in summary and list(parse_sections(summary)) == list(SECTIONS)
        assert heard == []


def test_code_blocks_inside_a_briefing_survive_unwrapping():
    inner = GOOD.replace("- files & state from the retry", "```python\nsales.groupby('region').sum()\n```")
    assert unfence(f"```md\n{inner}\n```") == inner
    assert unfence(inner) == inner


def test_a_session_saves_the_extractive_summary_and_stores_why(store):
    with FakeOpenAIServer() as server:
        config = Config.model_validate(
            {
                "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
                "context": {"summarize": {"keepRecent": 1, "background": False}},
            }
        )
        session = Session("weak", config=config, store=store)
        server.queue("North peaks in week 12.", "South peaks in week 30.")
        session.ask("Plot weekly revenue for North from data/sales.csv.")
        session.ask("And South?")
        server.queue(text(WEAK, finish_reason="length"), text(WEAK, finish_reason="length"))
        assert session.compact()
        summary_requests = server.chat_requests[2:]
    saved = store.load_summary("weak").text
    assert len(summary_requests) == 2 and "done three turns ago" not in saved and "```" not in saved
    assert "Plot weekly revenue for North" in parse_sections(saved)["Objective"]
    reasons = [
        (e.data["attempt"], e.data["reason"], e.data["then"])
        for e in store.list_events("weak")
        if e.kind == ev.SUMMARY_REJECTED
    ]
    assert reasons == [
        (1, 'it was cut off by the output token limit (finish_reason "length")', "retrying"),
        (2, 'it was cut off by the output token limit (finish_reason "length")', "using the extractive summary"),
    ]
    (finished,) = [e.data for e in store.list_events("weak", kind=ev.COMPACTION_FINISHED)]
    assert finished["used_fallback"] is True
