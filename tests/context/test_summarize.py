from __future__ import annotations

import json

import pytest

from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.ledger_text import parse_ledger, render_ledger
from monad_notebook.context.compaction.summarize import (
    SECTIONS,
    LLMSummarizer,
    attach_ledger,
    ensure_sections,
    parse_sections,
    reflect_with_fallback,
    render_span,
    summarize_with_fallback,
)
from monad_notebook.errors import EndpointError, ModelError
from monad_notebook.messages import Message, ToolCall
from monad_notebook.testing import ScriptedModel

BRIEFING = """## Objective
- Find the fastest-growing region in `data/sales.csv`

## Decisions & Facts
- `North` grew 20.9%

## Files & State
- `sales` loaded

## Open Tasks
- plot the trend

## Next Step
- call `sales.plot()`
"""


def headings(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def span_with_error() -> list[Message]:
    call = ToolCall("call_1", "run_python", json.dumps({"code": 'sales = pd.read_csv("data/sales.csv")'}))
    return [
        Message("user", "Load data/sales.csv and tell me which region grew fastest."),
        Message("assistant", "", tool_calls=[call]),
        Message(
            "tool", "Traceback (most recent call last):\nKeyError: 'revenue'", tool_call_id="call_1", name="run_python"
        ),
        Message("assistant", "The column is `Revenue`. North grew 20.9% last quarter. Next I will plot the trend."),
    ]


def test_the_fast_model_receives_the_previous_summary_and_the_span():
    model = ScriptedModel([BRIEFING])
    previous = "## Objective\n- Explore `data/sales.csv`\n"

    LLMSummarizer(model).summarize(previous, span_with_error())

    (call,) = model.calls
    sent = "\n".join(m["content"] for m in call.messages)
    assert "Explore `data/sales.csv`" in sent
    assert "Load data/sales.csv and tell me which region grew fastest." in sent
    assert "run_python" in sent
    assert "KeyError: 'revenue'" in sent
    assert "North grew 20.9% last quarter" in sent
    assert call.tools == []


def test_model_output_is_normalized_to_the_five_headings_in_order():
    messy = (
        "Sure! Here is the briefing.\n## Next step\n- plot\n## Objective\n- growth\n"
        "## Open tasks\n## Files and State\n## Decisions & facts\n"
    )

    summary = LLMSummarizer(ScriptedModel([messy])).summarize(None, span_with_error())

    assert headings(summary) == list(SECTIONS)
    sections = parse_sections(summary)
    assert sections["Next Step"] == "- plot"
    assert sections["Objective"] == "- growth"
    assert "Sure! Here is the briefing." in sections["Decisions & Facts"]


def test_an_answer_without_headings_is_retried_once_then_reported_as_a_model_error():
    model = ScriptedModel(["just prose", "still prose"])

    with pytest.raises(ModelError):
        LLMSummarizer(model).summarize(None, span_with_error())

    assert len(model.calls) == 2
    assert "five ## headings" in model.calls[1].last_message["content"]


def test_a_retried_answer_with_headings_is_accepted():
    model = ScriptedModel(["just prose", BRIEFING])

    summary = LLMSummarizer(model).summarize(None, span_with_error())

    assert parse_sections(summary)["Open Tasks"] == "- plot the trend"


def test_the_extractive_summary_is_used_when_the_endpoint_fails():
    model = ScriptedModel([EndpointError("Cannot reach http://127.0.0.1:9 (connection refused)")])

    summary, why = summarize_with_fallback(LLMSummarizer(model), ExtractiveSummarizer(), None, span_with_error())

    assert why == "Cannot reach http://127.0.0.1:9 (connection refused)"
    assert headings(summary) == list(SECTIONS)
    assert "Load data/sales.csv" in parse_sections(summary)["Objective"]


def test_no_fast_model_means_the_extractive_summary():
    summary, why = summarize_with_fallback(None, ExtractiveSummarizer(), None, span_with_error())

    assert why == ""  # the extractive summary, with no fast model's briefing to have replaced
    assert headings(summary) == list(SECTIONS)


def test_long_tool_outputs_are_clipped_so_the_request_fits_its_budget():
    huge = Message("tool", "row,value\n" * 100_000, tool_call_id="c", name="run_python")
    span = [Message("user", "Summarize the table."), huge, Message("assistant", "It has 100000 rows.")]
    model = ScriptedModel([BRIEFING])

    LLMSummarizer(model, span_budget_chars=8_000).summarize(None, span)

    request = model.calls[0].messages[-1]["content"]
    assert len(request) < 9_000
    assert "Summarize the table." in request
    assert "It has 100000 rows." in request
    assert "chars cut" in request


def test_a_span_too_long_for_the_budget_keeps_its_first_and_last_messages():
    span = [Message("user", f"request number {i} " + "x" * 300) for i in range(400)]

    text = render_span(span, budget_chars=10_000)

    assert len(text) <= 10_000
    assert "request number 0 " in text
    assert "request number 399 " in text
    assert "messages omitted" in text


def test_ensure_sections_adds_missing_headings_empty_and_keeps_subheadings():
    text = ensure_sections("```markdown\n## Objective\n- a\n### detail\n- b\n## Open tasks\n- c\n```")

    assert headings(text) == list(SECTIONS)
    assert parse_sections(text) == {
        "Objective": "- a\n### detail\n- b",
        "Decisions & Facts": "",
        "Files & State": "",
        "Open Tasks": "- c",
        "Next Step": "",
    }


def test_parse_sections_reports_only_sections_present():
    assert parse_sections("## Open Tasks\n- x\n## Next Step\n- y") == {"Open Tasks": "- x", "Next Step": "- y"}
    assert parse_sections("no headings at all") == {}


def test_attach_ledger_leaves_exactly_one_ledger_at_the_end_of_files_and_state():
    stale = BRIEFING.replace("- `sales` loaded", "- `sales` loaded\n" + render_ledger(["old.csv"]))

    text = attach_ledger(stale, ["old.csv", "new.csv"])

    assert text.count("Identifiers (verbatim):") == 1
    assert parse_ledger(text) == ["old.csv", "new.csv"]
    state = parse_sections(text)["Files & State"]
    assert state.startswith("- `sales` loaded")
    assert state.endswith("- `new.csv`")


def test_extractive_summary_tracks_the_request_the_open_error_and_the_stated_plan():
    summary = ExtractiveSummarizer().summarize(None, span_with_error())
    sections = parse_sections(summary)

    assert sections["Objective"] == "- Load data/sales.csv and tell me which region grew fastest."
    assert "North grew 20.9% last quarter." in sections["Decisions & Facts"]
    assert "KeyError: 'revenue'" in sections["Open Tasks"]
    assert sections["Next Step"] == "- Next I will plot the trend."


def test_extractive_summary_closes_an_error_once_the_same_tool_succeeds():
    fixed = [
        *span_with_error(),
        Message("tool", "   region  Revenue\n0  North  1200", tool_call_id="call_2", name="run_python"),
    ]

    sections = parse_sections(ExtractiveSummarizer().summarize(None, fixed))

    assert "KeyError" not in sections.get("Open Tasks", "")


def test_extractive_summary_keeps_the_first_objective_across_compactions():
    first = ExtractiveSummarizer().summarize(None, span_with_error())

    second = ExtractiveSummarizer().summarize(first, [Message("user", "Now export the chart to out/chart.png.")])

    objective = parse_sections(second)["Objective"]
    assert "- Load data/sales.csv and tell me which region grew fastest." in objective
    assert "- Latest request: Now export the chart to out/chart.png." in objective
    assert "In progress: Now export the chart" in parse_sections(second)["Open Tasks"]


def test_extractive_summary_stays_bounded_however_long_the_span():
    span = []
    for i in range(500):
        span.append(Message("user", f"question {i}: " + "why " * 200))
        span.append(Message("assistant", f"Answer {i} is {i * 3} units. " + "because " * 200))

    summary = ExtractiveSummarizer(max_section_chars=1_000).summarize(None, span)

    assert len(summary) < 5 * 1_100
    assert "Answer 499" in summary


def test_extractive_reflect_trims_every_section_and_keeps_headings_and_ledger():
    bloated = attach_ledger(
        "\n".join(f"## {name}\n" + "\n".join(f"- {name} fact {i} " + "z" * 80 for i in range(40)) for name in SECTIONS),
        ["data/sales.csv", "KeyError"],
    )

    condensed = ExtractiveSummarizer().reflect(bloated, target_tokens=400)

    assert len(condensed) < len(bloated) / 4
    assert len(condensed) <= 400 * 4 + 400
    assert headings(condensed) == list(SECTIONS)
    assert parse_ledger(condensed) == ["data/sales.csv", "KeyError"]
    assert "Next Step fact 39" in condensed


def test_model_reflection_keeps_the_ledger_even_when_the_model_drops_it():
    summary = attach_ledger(BRIEFING, ["data/sales.csv", "20.9%"])
    model = ScriptedModel([ensure_sections("## Objective\n- growth by region\n## Next Step\n- plot")])

    condensed = reflect_with_fallback(LLMSummarizer(model), ExtractiveSummarizer(), summary, 200)

    assert "Identifiers (verbatim):" in model.calls[0].messages[-1]["content"]
    assert "about 200 tokens" in model.calls[0].messages[0]["content"]
    assert headings(condensed) == list(SECTIONS)
    assert parse_ledger(condensed) == ["data/sales.csv", "20.9%"]


def test_reflection_falls_back_to_trimming_when_the_model_fails():
    summary = attach_ledger(BRIEFING, ["data/sales.csv"])
    model = ScriptedModel([EndpointError("down")])

    condensed = reflect_with_fallback(LLMSummarizer(model), ExtractiveSummarizer(), summary, 200)

    assert headings(condensed) == list(SECTIONS)
    assert parse_ledger(condensed) == ["data/sales.csv"]
